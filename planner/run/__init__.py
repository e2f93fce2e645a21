"""Running a plan: the executor, its journal, run manifests, status, and a SLURM export.

Everything here is torch-free; the runs themselves are subprocesses of their commands.
"""

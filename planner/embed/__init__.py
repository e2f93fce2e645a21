"""Embedding campaigns on the rented machine: shard lists, the worker, worst-case sizing.

Importing this package loads nothing heavy; the modules that need torch import it inside
the functions that run a model.
"""

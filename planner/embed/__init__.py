"""Embedding campaigns on the rented machine: the worker and its two encoders, the check
of an export against its shard list, worst-case sizing on the card.

Importing this package loads nothing heavy; the modules that need torch import it inside
the functions that run a model.
"""

"""Packing runs onto cards and what the window holds: the schedule, the objective, the
packers (`pack` chooses between `fast` and `cpsat`), their bounds and proofs, why a run was
left out, and the capacity of a window beyond the preset."""

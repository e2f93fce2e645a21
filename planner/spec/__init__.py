"""What the renter asks for: the preset and card-catalog schema, and the run matrix a preset
expands into.

The bottom of the core: these modules import only each other, `planner.errors` and
`planner.tomlio`. Every model is strict pydantic with a docstring per field
(`planner.spec.base`).
"""

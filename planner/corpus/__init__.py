"""Corpus and embedding planning: reading and scanning a corpus, token counts, padding,
the shard layout and token budget of an embedding plan, and the plan-time checks of a
model folder. Nothing here loads a model: the worker is `planner.embed`."""

"""Command templates: the placeholders a run's command may use, checked when a preset loads."""

from __future__ import annotations

import re
import string

TRAINING_PLACEHOLDERS = frozenset(
    {"run_id", "campaign_id", "variant", "seed", "factor", "value", "factors", "overrides",
     "checkpoint_dir", "resume", "export_name", "steps", "micro_batch", "accumulation",
     "effective_batch", "base_model", "trained_parameters", "dataset"}
)
EMBEDDING_PLACEHOLDERS = frozenset(
    {"run_id", "campaign_id", "version", "shard", "shards", "out_dir", "resume", "model",
     "tokenizer", "truncation", "pooling", "normalization", "batching", "batch_size",
     "token_budget", "part", "parts"}
)


def template_fields(template: str) -> set[str]:
    """Top-level placeholder names used in a `str.format` template."""
    names: set[str] = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def check_template(template: str, allowed: frozenset[str]) -> str:
    try:
        used = template_fields(template)
    except ValueError as exc:
        raise ValueError(f"malformed placeholder: {exc}") from None
    unknown = sorted(used - allowed)
    if "" in used:
        raise ValueError("empty placeholder {} (name one of: " + ", ".join(sorted(allowed)) + ")")
    if unknown:
        raise ValueError(
            f"unknown placeholder {{{unknown[0]}}}; known: " + ", ".join(sorted(allowed))
        )
    return template

"""The token budget of length-grouped batches, when the preset gives none.

Two things bound a batch: its padded tokens (memory, and the card's appetite) and its
documents (hundreds of short texts in one batch are slower, not faster: `batch_size` caps
them). Without `token_budget` in the preset the planner derives one:

1. from `corpus size` measurements for the target card (`--measurements`): the budget it
   found to fit the card's memory less the preset's margin (by real forward passes on the
   card, or the fake-tensor estimate elsewhere) and timed, on the device named;
2. otherwise a default per card memory (`DEFAULTS`): 16,384 padded tokens up to 24 GiB,
   32,768 up to 48 GiB, 65,536 above. On a CPU, 16,384 tokens runs all-MiniLM-L6-v2
   faster than sentence-transformers' own `encode` (benchmarks/bench_embed.py); on a card,
   `corpus size` finds what fits.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.spec.catalog import Card
from planner.spec.preset import Preset

if TYPE_CHECKING:
    from planner.figures.measurements import Measurements

# (card memory up to this many GiB, budget in padded tokens)
DEFAULTS = ((24.0, 16_384), (48.0, 32_768), (float("inf"), 65_536))


def default_budget(memory_gib: float) -> int:
    """The documented default budget for a card with this much memory."""
    return next(budget for upto, budget in DEFAULTS if memory_gib <= upto)


def with_budget(preset: Preset, card: Card,
                measurements: Measurements | None = None) -> tuple[Preset, str]:
    """The preset with its token budget set, and where the budget comes from. Its length
    summary counts the prompt first (`planner.corpus.prompt_tokens`): batch widths do."""
    from planner.corpus.prompt_tokens import with_prompt

    assert preset.embedding is not None
    e, prompt_note = with_prompt(preset.embedding)
    preset = preset.model_copy(update={"embedding": e})
    preset, note = _with_budget(preset, card, measurements)
    return preset, f"{note}; {prompt_note}" if prompt_note else note


def _with_budget(preset: Preset, card: Card,
                 measurements: Measurements | None) -> tuple[Preset, str]:
    e = preset.embedding
    assert e is not None
    if e.batching != "length-grouped":
        return preset, f"original order, {e.batch_size} documents per batch (batch_size)"
    cap = f"at most {e.batch_size} documents per batch (batch_size)"
    if e.token_budget is not None:
        return preset, f"{e.token_budget:,} padded tokens per batch (token_budget), {cap}"
    cm = measurements.by_config().get("embedding") if measurements is not None else None
    if (measurements is not None and cm is not None and cm.tokens_per_step
            and cm.batch is not None and cm.batch.card == preset.campaign.card):
        budget = cm.tokens_per_step
        # The card it was sized for and the device it was timed on are not the same thing:
        # a CPU run sizes an A6000 by the fake-tensor estimate, and is timed on the CPU.
        how = ("real forward passes under a memory cap" if cm.batch.method == "cuda"
               else "fake-tensor estimate")
        note = (f"{budget:,} padded tokens per batch, the budget `corpus size` found to fit "
                f"{card.name}'s memory ({how}) and timed on {measurements.device.name} "
                f"({measurements.file or 'measurements'}), {cap}")
    else:
        budget = default_budget(card.memory_gib)
        note = (f"{budget:,} padded tokens per batch, the default for a "
                f"{card.memory_gib:g} GiB card (no token_budget in the preset), {cap}")
    budget = max(budget, min(e.lengths.max, e.truncation_tokens))
    new = e.model_copy(update={"token_budget": budget})
    return preset.model_copy(update={"embedding": new}), note

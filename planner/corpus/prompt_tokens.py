"""The prompt's tokens in the plan's token figures.

Both backends put the preset's `prompt` (e5's `passage: `, a bge instruction) before every
text, so every document costs the prompt's tokens too, in padded tokens, batch widths and
hours. A scanned corpus counts them already (`corpus scan` and `--corpus` tokenize prompt
and text together). A length summary without them (`prompt_included = false`, as one
entered by hand) gets them added here, counted with the campaign's tokenizer when its
`tokenizer.json` is found, with the declared approximation otherwise.
"""

from __future__ import annotations

import functools

from planner.spec import bounds
from planner.spec.embedding import Embedding


def prompt_tokens(e: Embedding) -> int:
    """Tokens the prompt adds to a text: the prompt's count less the special tokens any
    text gets."""
    return _count(e.tokenizer, e.prompt) if e.prompt else 0


# Plans are remade on every edit in the TUI; a large tokenizer.json takes a while to load.
@functools.lru_cache(maxsize=16)
def _count(tokenizer: str, prompt: str) -> int:
    from planner.corpus.tokens import TokenCounter

    alone, empty = TokenCounter(tokenizer).count([prompt, ""])
    return max(0, alone - empty)


def with_prompt(e: Embedding) -> tuple[Embedding, str]:
    """The embedding with its length summary counting the prompt, and a note saying so
    (empty without a prompt)."""
    if not e.prompt:
        return e, ""
    if e.lengths.prompt_included:
        return e, f"token counts include the prompt {e.prompt!r} before every document"
    n = prompt_tokens(e)
    lz = e.lengths
    shifted = lz.model_copy(update={
        "prompt_included": True,
        **{k: min(bounds.TOKENS, getattr(lz, k) + n)
           for k in ("min", "p50", "p90", "p99", "max")}})
    note = (f"token counts include the prompt {e.prompt!r} before every document: {n} "
            f"tokens added to each length of the preset's summary")
    return e.model_copy(update={"lengths": shifted}), note

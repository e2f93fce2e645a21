"""The preset against the model folder: every setting that would make vectors other than
the model's own is refused at plan time, unless the preset says why it differs.

A preset opts out per setting with a reason, e.g.
`differs_from_model = { pooling = "compared against a mean-pooled baseline" }`; the reason
is carried into the plan as a warning and the worker then follows the preset.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner.corpus.folder import ModelFolder
from planner.errors import InputError
from planner.spec.embedding import Embedding

# Prefixes some model families require whatever their folder says (from their model cards).
CARD_PROMPTS = (
    ("e5", ("query: ", "passage: ")),
    ("nomic-embed-text", ("search_document: ", "search_query: ", "clustering: ",
                          "classification: ")),
)

DOCUMENT_PROMPTS = {"passage", "document", "doc", "corpus", "text"}
# Words that mark a prompt as the query side: e5's `query: `, nomic's `search_query: `,
# instructions such as bge's "Represent this sentence for searching relevant passages: "
# or "Instruct: Given a web search query, retrieve relevant passages…".
QUERY_MARKS = ("query", "searching relevant", "retrieve relevant", "question")


@dataclass(frozen=True)
class Conflict:
    """One preset setting at odds with the folder."""

    setting: str
    message: str


def required_prompts(e: Embedding, f: ModelFolder) -> tuple[str, ...]:
    """Prompts one of which every text must start with: the folder's when it applies one by
    default or defines one for documents (a query-only prompt is for queries, not the
    corpus), else the model card's for a known family (none for most models)."""
    if f.prompts:
        default = f.default_prompt_name in f.prompts
        for_documents = any(k.lower() in DOCUMENT_PROMPTS for k in f.prompts)
        return tuple(dict.fromkeys(f.prompts.values())) if default or for_documents else ()
    name = Path(e.model).name.lower()
    for family, prompts in CARD_PROMPTS:
        if family in name and "instruct" not in name:
            return prompts
    return ()


def conflicts(e: Embedding, f: ModelFolder) -> list[Conflict]:
    """Every setting of the preset that contradicts the folder."""
    out: list[Conflict] = []
    if f.pooling and f.preset_pooling != e.pooling:
        out.append(Conflict("pooling", f"{e.pooling} pooling, but the model pools with "
                                       f"{f.preset_pooling} (1_Pooling/config.json)"))
    if f.sentence_transformers and f.normalized != (e.normalization == "l2"):
        has = "ends in a Normalize module" if f.normalized else "has no Normalize module"
        out.append(Conflict("normalization", f"{e.normalization} normalization, but the "
                                             f"model's stack {has}"))
    if e.dimensions is not None and e.dimensions < f.dim:
        out.append(Conflict("dimensions", f"{e.dimensions} dimensions, but the model's stack "
                                          f"outputs {f.dim} ({f.stack()}); kept, the "
                                          f"vectors are their leading {e.dimensions} "
                                          "dimensions, normalized as the preset says"))
    if f.max_seq_length and e.truncation_tokens > f.max_seq_length:
        out.append(Conflict("truncation_tokens", f"truncation {e.truncation_tokens}, but the "
                                                 f"model's max_seq_length is "
                                                 f"{f.max_seq_length}: longer texts would "
                                                 "not be embedded as the model embeds them"))
    wanted = required_prompts(e, f)
    if wanted and e.prompt not in wanted:
        shown = " or ".join(repr(p) for p in wanted)
        got = f"prompt {e.prompt!r}" if e.prompt else "no prompt"
        out.append(Conflict("prompt", f"{got}, but the model expects texts to start with "
                                      f"{shown}: set embedding.prompt"))
    return out


def query_prompt(e: Embedding, f: ModelFolder | None) -> str | None:
    """A warning when the prompt is a query-side one and the preset does not say the
    corpus is queries (`prompt_kind = "query"`): documents embedded as queries match
    queries less well. None otherwise."""
    if not e.prompt or e.prompt_kind == "query":
        return None
    named = [k for k, v in (f.prompts.items() if f is not None else ()) if v == e.prompt]
    if named:
        if not any(m in k.lower() for k in named for m in QUERY_MARKS):
            return None
        why = f"the model folder names it {named[0]!r}"
    elif any(m in e.prompt.lower() for m in QUERY_MARKS):
        why = "it reads as one"
    else:
        return None
    documents = [repr(v) for k, v in (f.prompts.items() if f is not None else ())
                 if k.lower() in DOCUMENT_PROMPTS]
    hint = f"the model's document prompt ({', '.join(documents)})" if documents else \
        "the model's document prompt (e5: 'passage: ', nomic: 'search_document: ')"
    return (f"embedding.prompt {e.prompt!r} is a query-side prompt ({why}), but the corpus "
            f"is embedded as documents: use {hint}, or set prompt_kind = \"query\" when "
            "this corpus is queries")


def judge(e: Embedding, f: ModelFolder, *, source: str | None = None) -> list[str]:
    """Raise for the first conflict the preset does not opt out of; warnings for the
    others, each with the preset's reason."""
    # Checked first: no reason makes a stack output more dimensions than it has, so the
    # refusal must not suggest one.
    if e.dimensions is not None and e.dimensions > f.dim:
        raise InputError(f"{e.dimensions} dimensions: the model's stack outputs only "
                         f"{f.dim} ({f.stack()}); set dimensions = {f.dim} or fewer, or "
                         "leave it out", file=source, field="embedding.dimensions")
    warnings = []
    for c in conflicts(e, f):
        reason = e.differs_from_model.get(c.setting)  # type: ignore[call-overload]
        if not reason:
            raise InputError(f"{c.message} (to keep it, give the reason in "
                             f"embedding.differs_from_model.{c.setting})", file=source,
                             field=f"embedding.{c.setting}")
        warnings.append(f"embedding.{c.setting} differs from the model: {c.message}; kept "
                        f"because {reason}")
    if f.positions and e.truncation_tokens > f.positions:
        raise InputError(f"truncation {e.truncation_tokens} exceeds the model's "
                         f"{f.positions} positions", file=source,
                         field="embedding.truncation_tokens")
    return warnings

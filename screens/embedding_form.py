"""The embedding workload form: the corpus, the settings fixed for the whole campaign, and
the batching."""

from __future__ import annotations

import re
from typing import get_args

from pydantic import ValidationError
from textual.app import ComposeResult
from textual.containers import Grid, Vertical
from textual.widgets import Label, Static

from planner.errors import from_validation
from planner.spec.costs import Figure
from planner.spec.preset import Embedding, Preset, TokenLengths
from screens import state
from screens.widgets.form import ChoiceRow, FieldRow, help_of

QUANTILES = ("min", "p50", "p90", "p99", "max")


def parse_lengths(text: str) -> TokenLengths:
    """Token lengths entered by hand: `min 8 · p50 310 · p90 1400 · p99 6000 · max 32000`,
    or the five numbers alone in that order."""
    words = [w for w in re.split(r"[\s,;=·:]+", text.strip().lower()) if w]
    if any(w in QUANTILES for w in words):
        if len(words) != 10 or sorted(words[0::2]) != sorted(QUANTILES):
            raise ValueError("give each of min, p50, p90, p99 and max once, each with a "
                             "number, e.g. min 8 · p50 310 · p90 1400 · p99 6000 · max 32000")
        pairs = dict(zip(words[0::2], words[1::2], strict=True))
        values = [state.parse_int(pairs[q]) for q in QUANTILES]
    else:
        values = state.parse_ints(text.replace("·", " "))
    if len(values) != 5:
        raise ValueError("give five token lengths: min p50 p90 p99 max")
    try:
        return TokenLengths.model_validate({**dict(zip(QUANTILES, values, strict=True)),
                                            "source": "entered"})
    except ValidationError as exc:
        raise ValueError(str(from_validation(exc, None))) from None


def show_lengths(lengths: TokenLengths) -> str:
    """Token lengths, each named, as `parse_lengths` reads them."""
    return " · ".join(f"{q} {getattr(lengths, q)}" for q in QUANTILES)


POOLING: tuple[str, ...] = get_args(Embedding.model_fields["pooling"].annotation)
"""Every pooling mode a preset may name (sentence-transformers' Pooling modes)."""

BACKENDS: tuple[str, ...] = get_args(Embedding.model_fields["backend"].annotation)
"""What may load the model (see `planner.corpus.backends`)."""


def parse_prompt(text: str) -> str:
    """The prompt exactly as typed: its trailing space (e5's `passage: `) is part of it."""
    return text


def parse_throughput(text: str) -> Figure | None:
    """Tokens per second typed by hand: an `entered` figure (empty: none, the plan takes
    the analytic estimate)."""
    if not text.strip():
        return None
    value = state.parse_float(text)
    if value <= 0:
        raise ValueError("throughput must be more than 0")
    return Figure(value=value, source="entered", note="entered in campaign-planner")


class EmbeddingForm(Vertical):
    """Corpus, fixed model / tokenizer / truncation / pooling / normalization, batching."""

    DEFAULT_CSS = """
    EmbeddingForm { height: auto; }
    EmbeddingForm > Grid { grid-size: 2; grid-gutter: 0 2; height: auto; }
    EmbeddingForm > Grid > FieldRow > Label { width: 18; }
    EmbeddingForm > #fixed { margin-top: 1; height: auto; }
    EmbeddingForm .-span { column-span: 2; }
    EmbeddingForm .-span > Input { max-width: 100%; }
    """

    def compose(self) -> ComposeResult:
        e = Embedding
        yield Label("Corpus", classes="section")
        with Grid():
            yield FieldRow("Documents", "embedding.documents", state.parse_int,
                           tooltip=help_of(e, "documents"))
            yield FieldRow("Versions", "embedding.versions", state.parse_int,
                           tooltip=help_of(e, "versions"))
            yield FieldRow("Lengths, tokens", "embedding.lengths", parse_lengths,
                           tooltip="Token lengths of the documents: the shortest (min), the "
                                   "median (p50), the 90th and 99th percentiles, the longest "
                                   "(max)").add_class("-span")
            yield FieldRow("Throughput tok/s", "embedding.throughput_tokens_per_s",
                           parse_throughput, tooltip=help_of(e, "throughput_tokens_per_s"))
        yield Label("Fixed for the whole campaign", classes="section")
        with Grid():
            yield FieldRow("Model", "embedding.model", state.parse_text,
                           tooltip=help_of(e, "model")).add_class("-span")
            yield FieldRow("Tokenizer", "embedding.tokenizer", state.parse_text,
                           tooltip=help_of(e, "tokenizer")).add_class("-span")
            yield FieldRow("Prompt", "embedding.prompt", parse_prompt,
                           tooltip=help_of(e, "prompt")).add_class("-span")
            yield FieldRow("Truncation tokens", "embedding.truncation_tokens", state.parse_int,
                           tooltip=help_of(e, "truncation_tokens"))
            yield ChoiceRow("Pooling", "embedding.pooling", POOLING, "mean",
                            tooltip=help_of(e, "pooling"))
            yield ChoiceRow("Normalization", "embedding.normalization", ("l2", "none"), "l2",
                            tooltip=help_of(e, "normalization"))
            yield FieldRow("Dimensions", "embedding.dimensions", state.parse_optional_int,
                           tooltip=help_of(e, "dimensions"))
            yield ChoiceRow("Backend", "embedding.backend", BACKENDS, "auto",
                            tooltip=help_of(e, "backend"))
        yield Label("Batching", classes="section")
        with Grid():
            yield ChoiceRow("Strategy", "embedding.batching", ("original", "length-grouped"),
                            "length-grouped", tooltip=help_of(e, "batching"))
            yield FieldRow("Batch size", "embedding.batch_size", state.parse_int,
                           tooltip=help_of(e, "batch_size"))
            yield FieldRow("Token budget", "embedding.token_budget", state.parse_optional_int,
                           tooltip=help_of(e, "token_budget"))
        yield Static("", id="fixed", classes="hint")

    def show(self, preset: Preset) -> None:
        """Show the preset's embedding workload."""
        e = preset.embedding
        if e is None:
            return
        values = {
            "embedding.documents": str(e.documents),
            "embedding.lengths": show_lengths(e.lengths),
            "embedding.versions": str(e.versions),
            "embedding.throughput_tokens_per_s": state.show_number(
                e.throughput_tokens_per_s.value) if e.throughput_tokens_per_s else "",
            "embedding.model": e.model, "embedding.tokenizer": e.tokenizer,
            "embedding.truncation_tokens": str(e.truncation_tokens),
            "embedding.pooling": e.pooling, "embedding.normalization": e.normalization,
            "embedding.dimensions": str(e.dimensions) if e.dimensions else "",
            "embedding.backend": e.backend, "embedding.prompt": e.prompt,
            "embedding.batching": e.batching, "embedding.batch_size": str(e.batch_size),
            "embedding.token_budget": str(e.token_budget) if e.token_budget else "",
        }
        for row in self.query(FieldRow):
            row.sync(values[row.path])
        kept = "; ".join(f"{k} ({why})" for k, why in e.differs_from_model.items())
        tput = (e.throughput_tokens_per_s.label() if e.throughput_tokens_per_s
                else "analytic (none given: estimated from the encoder)")
        self.query_one("#fixed", Static).update(
            f"Lengths are {e.lengths.source}; throughput is {tput}. Model, tokenizer, "
            "truncation, pooling, "
            "normalization, dimensions and prompt stay fixed across every version: changing "
            "one makes a new corpus."
            + (f" Kept although the model folder says otherwise (differs_from_model in the "
               f"preset file): {kept}." if kept else ""))

"""The embedding workload: a corpus and the settings fixed for the whole campaign."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from planner import bounds
from planner.costs import Figure
from planner.measure_spec import MeasureSpec
from planner.model import Strict
from planner.paths import check_root
from planner.templates import EMBEDDING_PLACEHOLDERS, check_template


class TokenLengths(Strict):
    """Summary of the corpus's token lengths (per document, before truncation)."""

    min: int = Field(ge=0, le=bounds.TOKENS)
    """Shortest document, in tokens."""
    p50: int = Field(ge=0, le=bounds.TOKENS)
    """Median length."""
    p90: int = Field(ge=0, le=bounds.TOKENS)
    """90th percentile."""
    p99: int = Field(ge=0, le=bounds.TOKENS)
    """99th percentile."""
    max: int = Field(ge=1, le=bounds.TOKENS)
    """Longest document."""
    source: Literal["entered", "scanned", "approximate"] = "entered"
    """`entered` by hand, `scanned` with the real tokenizer, or `approximate` (a declared
    approximation of token counts)."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        q = [self.min, self.p50, self.p90, self.p99, self.max]
        if q != sorted(q):
            raise ValueError("@p50: lengths must not decrease: min ≤ p50 ≤ p90 ≤ p99 ≤ max")
        return self


class Embedding(Strict):
    """An embedding corpus: one fixed model and preprocessing, run over every document."""

    documents: int = Field(ge=1, le=bounds.DOCUMENTS)
    """Documents in the corpus."""
    lengths: TokenLengths
    """Token-length summary of the corpus."""
    model: str
    """The embedding model, fixed for the whole campaign."""
    tokenizer: str
    """The tokenizer, fixed for the whole campaign."""
    truncation_tokens: int = Field(ge=1, le=bounds.TOKENS)
    """Documents are cut to this many tokens."""
    pooling: Literal["mean", "cls", "max", "last"]
    """How token vectors become one vector."""
    normalization: Literal["l2", "none"]
    """Vector normalization."""
    batching: Literal["original", "length-grouped"] = "length-grouped"
    """Original order with a fixed batch size, or grouped by length under a token budget."""
    batch_size: int = Field(default=64, ge=1, le=bounds.BATCH)
    """Documents per batch in original order."""
    token_budget: int = Field(default=65536, ge=1, le=bounds.TOKEN_BUDGET)
    """Padded tokens per batch when grouped by length (padded length × batch ≤ budget)."""
    throughput_tokens_per_s: Figure
    """Padded tokens per second on one card, with provenance."""
    versions: int = Field(default=1, ge=1, le=bounds.VERSIONS)
    """Representation versions wanted: full passes over the corpus, each with its settings fixed."""
    shard_documents: int = Field(default=50_000, ge=1, le=bounds.DOCUMENTS)
    """Documents per shard at most: the unit exported as one file and resumed from. Shards
    hold whole batches, so a single batch larger than this makes a shard of its own."""
    command: str = "campaign-planner embed {plan} --version {version} --part {part}/{parts}"
    """Command of one run (one card, one version); placeholders such as {run_id},
    {version}, {part} (the run's index), {parts} (runs per version), {out_dir}."""
    export_root: str = "embeddings"
    """Folder holding one folder per campaign and version, one file per shard."""
    measure: MeasureSpec | None = None
    """How `campaign-planner measure` times one batch of the longest texts: the reference
    encoder (`reference = "encoder"`) or your own factory (see `planner.measure_spec`)."""

    @field_validator("command")
    @classmethod
    def _template(cls, v: str) -> str:
        return check_template(v, EMBEDDING_PLACEHOLDERS | {"plan"})

    @field_validator("export_root")
    @classmethod
    def _root(cls, v: str) -> str:
        return check_root(v)

    @model_validator(mode="after")
    def _budget(self) -> Self:
        if self.batching == "length-grouped" and self.token_budget < min(
            self.lengths.max, self.truncation_tokens
        ):
            raise ValueError(
                f"@token_budget: {self.token_budget} cannot hold the longest document "
                f"({min(self.lengths.max, self.truncation_tokens)} tokens after truncation)"
            )
        return self

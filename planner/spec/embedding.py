"""The embedding workload: a corpus and the settings fixed for the whole campaign."""

import operator
from typing import ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from planner.spec import bounds
from planner.spec.base import Strict
from planner.spec.costs import Figure
from planner.spec.measure import MeasureSpec
from planner.spec.paths import check_root
from planner.spec.templates import EMBEDDING_PLACEHOLDERS, check_command

DEFAULT_TOKEN_BUDGET = 16_384


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
    # Left out of a dump while false: a preset's fingerprint, hence its campaign id and
    # export folders, stays what it was before the setting existed.
    prompt_included: bool = Field(default=False, exclude_if=operator.not_)
    """Whether these lengths already count the campaign's prompt before each document (as
    `corpus scan` does when the preset has one); otherwise the planner adds the prompt's
    tokens to every length."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        q = [self.min, self.p50, self.p90, self.p99, self.max]
        if q != sorted(q):
            raise ValueError("@p50: lengths must not decrease: min ≤ p50 ≤ p90 ≤ p99 ≤ max")
        return self


class Embedding(Strict):
    """An embedding corpus: one fixed model and preprocessing, run over every document."""

    SCRIPTS: ClassVar[frozenset[str]] = frozenset({"command"})

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
    pooling: Literal["mean", "cls", "max", "last", "mean_sqrt_len_tokens", "weightedmean"]
    """How token vectors become one vector (checked against the model folder's Pooling)."""
    normalization: Literal["l2", "none"]
    """Vector normalization (checked against the folder's Normalize module)."""
    prompt: str = Field(default="", max_length=1000)
    """Text put before every document, such as e5's `passage: ` or a bge instruction:
    fixed for the campaign like the pooling, and checked against the folder's prompts."""
    # Left out of a dump while at their defaults: a preset's fingerprint, hence its
    # campaign id and export folders, stays what it was before the settings existed.
    prompt_kind: Literal["document", "query"] = Field(default="document",
                                                      exclude_if=lambda v: v == "document")
    """What the prompt is for: `document` (the corpus side, the default) or `query`, to
    embed a corpus of queries with a query-side prompt such as e5's `query: ` without the
    plan's warning."""
    format: Literal["npz", "parquet", "safetensors"] = Field(
        default="npz", exclude_if=lambda v: v == "npz")
    """File format of each exported shard (and of `embed --merge`): `npz` (numpy),
    `parquet` (one row per document: id, vector, tokens; extra `parquet`) or
    `safetensors`."""
    vector_dtype: Literal["float32", "float16", "int8", "binary"] = Field(
        default="float32", exclude_if=lambda v: v == "float32")
    """Type of the exported vectors: `float32`, `float16`, or quantized as
    sentence-transformers' `quantize_embeddings` does: `int8` (per-dimension ranges
    calibrated once per version, stored with the exports) or `binary` (one bit per
    dimension, packed into int8)."""
    dimensions: int | None = Field(default=None, ge=1, le=1_000_000)
    """Vector size expected (after any Dense module); checked against the folder."""
    backend: Literal["auto", "builtin", "sentence-transformers"] = "auto"
    """What loads the model: the light built-in BERT encoder (extra `embed`), the
    folder's own module stack on sentence-transformers (extra `embed-st`), or `auto`:
    the built-in one where it can, sentence-transformers otherwise."""
    differs_from_model: dict[Literal["pooling", "normalization", "dimensions",
                                     "truncation_tokens", "prompt"], str] = {}
    """Settings kept although they contradict the model folder, each with the reason
    (carried into the plan as a warning); any other contradiction is an error."""
    batching: Literal["original", "length-grouped"] = "length-grouped"
    """Original order with a fixed batch size, or grouped by length under a token budget."""
    batch_size: int = Field(default=64, ge=1, le=bounds.BATCH)
    """Documents per batch: exactly this many in original order, at most this many when
    grouped by length (many short texts in one batch are slower, not faster)."""
    token_budget: int | None = Field(default=None, ge=1, le=bounds.TOKEN_BUDGET)
    """Padded tokens per batch when grouped by length (padded length × batch ≤ budget);
    without it the planner derives one for the card (see `planner.corpus.budget`)."""
    # Left out of a dump while absent (a TOML file has no null).
    throughput_tokens_per_s: Figure | None = Field(default=None,
                                                   exclude_if=lambda v: v is None)
    """Padded tokens per second on one card, with provenance. Leave it out to plan on the
    `analytic` estimate: the encoder's FLOPs per padded token (its shape is known for the
    common encoders, else give `[embedding.measure]` with `reference = "encoder"`) at the
    share of the card's peak that published encoder servers reach, with a range and the
    published conditions (fp16, dynamic batching) in the plan."""
    versions: int = Field(default=1, ge=1, le=bounds.VERSIONS)
    """Representation versions wanted: full passes over the corpus, each with its settings fixed."""
    shard_documents: int = Field(default=50_000, ge=1, le=bounds.DOCUMENTS)
    """Documents per shard at most: the unit exported as one file and resumed from. Shards
    hold whole batches, so a single batch larger than this makes a shard of its own."""
    command: str = "campaign-planner embed {plan} --version {version} --part {part}/{parts}"
    """Command of one run (one card, one version); placeholders such as {run_id},
    {version}, {part} (the run's index), {parts} (runs per version), {out_dir}."""
    shell: bool = False
    """Run the command with `/bin/sh -c` (pipes, `&&`, redirections, `$VAR`); without it
    the command is an argument vector started with no shell."""
    export_root: str = "embeddings"
    """Folder holding one folder per campaign and version, one file per shard."""
    measure: MeasureSpec | None = None
    """How `campaign-planner measure` times one batch of the longest texts: the reference
    encoder (`reference = "encoder"`) or your own factory (see `planner.spec.measure`)."""

    @property
    def grouped_budget(self) -> int:
        """The token budget, or the smallest card default when the preset gives none (the
        planner sets the card's own before planning: `planner.corpus.budget`)."""
        return self.token_budget or DEFAULT_TOKEN_BUDGET

    @property
    def run_dtype(self) -> Literal["fp32", "tf32", "bf16", "fp16"]:
        """The precision a run computes in: the `--dtype` its command gives
        `campaign-planner embed` (fp32 without one, that command's default); for any
        other command, the measurement section's (bf16 without one)."""
        words = self.command.replace("=", " ").split()
        for i, w in enumerate(words[:-1]):
            if w.endswith("campaign-planner") and words[i + 1] == "embed":
                rest = words[i + 2:]
                for j, flag in enumerate(rest[:-1]):
                    if flag == "--dtype" and rest[j + 1] in ("fp32", "bf16", "fp16"):
                        return rest[j + 1]  # type: ignore[return-value]
                return "fp32"
        if self.measure is not None and self.measure.dtype != "fp8":
            return self.measure.dtype
        return "bf16"

    @field_validator("differs_from_model")
    @classmethod
    def _reasons(cls, v: dict[str, str]) -> dict[str, str]:
        for key, reason in v.items():
            if not reason.strip():
                raise ValueError(f"@{key}: give the reason this setting differs from the "
                                 "model")
        return v

    @model_validator(mode="after")
    def _template(self) -> Self:
        return check_command(self, EMBEDDING_PLACEHOLDERS | {"plan"})

    @field_validator("export_root")
    @classmethod
    def _root(cls, v: str) -> str:
        return check_root(v)

    @model_validator(mode="after")
    def _budget(self) -> Self:
        if self.batching == "length-grouped" and self.token_budget is not None and \
                self.token_budget < min(
            self.lengths.max, self.truncation_tokens
        ):
            raise ValueError(
                f"@token_budget: {self.token_budget} cannot hold the longest document "
                f"({min(self.lengths.max, self.truncation_tokens)} tokens after truncation)"
            )
        return self

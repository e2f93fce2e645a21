"""The embedding campaign's part of the Plan: its fixed settings and expected counts."""

from typing import Literal

from pydantic import Field

from planner.corpus.outputs import CorpusPlan
from planner.spec.base import Lax


class BatchingFigures(Lax):
    """Padding accounting of one batching strategy."""

    strategy: Literal["original", "length-grouped"]
    """Which strategy."""
    batches: int
    """Batches over the corpus."""
    useful_tokens: int
    """Non-padding tokens."""
    padded_tokens: int
    """Tokens computed, padding included."""
    padding_fraction: float
    """Share of padding."""
    hours_per_version: float
    """Card-hours ÷ cards for one pass with this strategy."""


class EmbeddingPlan(Lax):
    """The fixed settings and the expected counts of an embedding campaign."""

    model: str
    """Embedding model, fixed for the campaign."""
    tokenizer: str
    """Tokenizer, fixed."""
    truncation_tokens: int
    """Truncation, fixed."""
    pooling: str
    """Pooling, fixed."""
    normalization: str
    """Normalization, fixed."""
    prompt: str = ""
    """Text put before every document, fixed."""
    dimensions: int | None = None
    """Vector size the exports have (the folder's, when found while planning)."""
    backend: str = "auto"
    """What loads the model: `builtin` or `sentence-transformers` (named when the model's
    folder was found while planning), `auto` when the worker decides."""
    model_stack: str = ""
    """The folder's module stack, when found while planning."""
    differs_from_model: dict[str, str] = {}
    """Settings kept although the model folder says otherwise, with the preset's reasons."""
    settings_fingerprint: str
    """SHA-256 over model, tokenizer, truncation, pooling, normalization, prompt, dimensions
    and backend choice."""
    batching: str
    """Strategy planned."""
    documents: int
    """Documents per version."""
    lengths_source: str
    """Where the token lengths came from."""
    strategies: list[BatchingFigures]
    """Both strategies side by side."""
    versions_wanted: int
    """Representation versions asked for."""
    versions_fit: int
    """Complete versions that fit the window."""
    documents_fit_first_version: int
    """Documents of the first version that fit (all of them when it fits)."""
    model_sha256: str = ""
    """SHA-256 of the model's weights file, when found while planning with --corpus."""
    tokenizer_sha256: str = ""
    """SHA-256 of the tokenizer.json that counted the tokens, when found."""
    shards: int = 0
    """Shards per version: export files (estimated without a scanned corpus)."""
    shard_documents: int = 0
    """Documents per shard at most."""
    batch_size: int = 0
    """Documents per batch in original order."""
    token_budget: int = 0
    """Padded tokens per batch when grouped by length (at most `batch_size` documents)."""
    budget_note: str = ""
    """Where the batch sizes come from, and why."""
    export_layout: str = ""
    """Where each version's shard files and manifest are written."""
    # Left out of a dump while at their defaults: plans made before they existed read the
    # same, and new plans of the same presets are written word for word as before.
    format: Literal["npz", "parquet", "safetensors"] = Field(
        default="npz", exclude_if=lambda v: v == "npz")
    """File format of the exported shards."""
    vector_dtype: Literal["float32", "float16", "int8", "binary"] = Field(
        default="float32", exclude_if=lambda v: v == "float32")
    """Type of the exported vectors (`int8` and `binary` quantized as
    sentence-transformers' `quantize_embeddings` does)."""
    prompt_kind: Literal["document", "query"] = Field(default="document",
                                                      exclude_if=lambda v: v == "document")
    """What the prompt is for: the corpus side (`document`) or queries."""
    corpus: CorpusPlan | None = None
    """The scanned corpus and its shard list (planned with --corpus)."""


__all__ = ["BatchingFigures", "EmbeddingPlan"]

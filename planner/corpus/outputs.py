"""What a corpus scan found, and the corpus part of an embedding plan (output models)."""

from planner.spec.base import Lax
from planner.spec.embedding import TokenLengths


class LongDoc(Lax):
    """One of the longest documents."""

    id: str
    """Its id."""
    line: int
    """Line (Parquet: row) it starts on."""
    offset: int = 0
    """Byte offset of its record (Parquet: row index)."""
    tokens: int
    """Tokens before truncation."""


class Bin(Lax):
    """One bar of the token-length histogram."""

    upto: int
    """Documents of at most this many tokens (and more than the previous bar's)."""
    documents: int
    """How many."""


class StrategyCount(Lax):
    """Padding accounting of one batching strategy over the scanned corpus."""

    strategy: str
    """`original` or `length-grouped`."""
    batches: int
    """Batches over the corpus."""
    useful_tokens: int
    """Tokens that are not padding (after truncation)."""
    padded_tokens: int
    """Tokens computed, padding included."""
    padding_fraction: float
    """Share of padding."""


class CorpusScan(Lax):
    """A corpus, measured: counts, lengths and what both batching strategies would compute."""

    corpus: str
    """The corpus file."""
    format: str
    """`jsonl`, `csv`, `tsv` or `parquet`."""
    id_field: str
    """Field holding each document's stable id."""
    text_field: str
    """Field holding the text."""
    bytes: int
    """Size of the file."""
    documents: int
    """Documents (records)."""
    empty: int
    """Documents whose text is empty, blank or absent (still embedded, listed here)."""
    empty_lines: list[int] = []
    """Lines of the first empty documents."""
    tokens: int
    """Tokens before truncation, special tokens included."""
    truncation_tokens: int
    """Truncation the strategies were counted with."""
    truncated: int
    """Documents longer than the truncation."""
    tokenizer: str
    """What counted the tokens: the tokenizer file and its checksum, or the approximation."""
    tokenizer_sha256: str = ""
    """SHA-256 of tokenizer.json (empty for the approximation)."""
    prompt: str = ""
    """The prompt counted before every text (the preset's), as the encoder puts it there."""
    lengths: TokenLengths
    """Length summary (`scanned` with the real tokenizer, `approximate` otherwise)."""
    histogram: list[Bin]
    """Token lengths before truncation, in power-of-two bars."""
    longest: list[LongDoc]
    """The longest documents, longest first."""
    batch_size: int
    """Documents per batch in original order."""
    token_budget: int
    """Padded tokens per batch when grouped by length."""
    strategies: list[StrategyCount]
    """Both batching strategies side by side."""
    seconds: float
    """Time the scan took."""


class PartFigures(Lax):
    """What one run (one card, one version) embeds: every `parts`-th shard from `part`."""

    part: int
    """Part index (the run's `shard`)."""
    shards: int
    """Shards in this part."""
    documents: int
    """Documents in this part."""
    useful_tokens: int
    """Useful tokens in this part."""
    padded_tokens: int
    """Padded tokens in this part."""


class CorpusPlan(Lax):
    """The scanned corpus behind an embedding plan, and its shard list."""

    path: str
    """The corpus file, as given when planning (the worker may be pointed elsewhere)."""
    format: str
    """`jsonl`, `csv`, `tsv` or `parquet`."""
    id_field: str
    """Field holding each document's stable id."""
    text_field: str
    """Field holding the text."""
    bytes: int
    """Size of the file when scanned; the worker refuses a file of another size."""
    documents: int
    """Documents per version."""
    useful_tokens: int
    """Useful tokens per version (after truncation)."""
    padded_tokens: int
    """Padded tokens per version with the planned batching."""
    tokenizer: str
    """What counted the tokens."""
    shard_list: str
    """The shard list next to plan.toml: per-shard counts, and the ids file it names."""
    shard_list_sha256: str
    """SHA-256 of the shard list; the worker refuses a list that does not match."""
    shard_documents: int
    """Documents per shard at most."""
    shards: int
    """Shards per version."""
    parts: list[PartFigures]
    """Expected counts per run."""

"""The shard list: the batches of an embedding campaign, prepared before the rental.

Two files sit next to `plan.toml`:

- `shards.toml`, readable: the corpus it was made from, the batching, the totals, and one
  entry per shard with its expected counts and where its lines start in the ids file;
- `shards.jsonl`, one line per document in processing order: `[batch, "id", offset, tokens]`
  (the global batch index, the stable id, the record's byte offset — row for Parquet — and
  its token count before truncation).

The plan names `shards.toml` with its SHA-256; `shards.toml` names `shards.jsonl` with its
own, so a worker can tell that every file is the one planned.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import tomli_w
from pydantic import ValidationError

from planner.corpus.tokens import file_sha256
from planner.errors import InputError, from_validation
from planner.spec.base import Lax
from planner.tomlio import read_toml

LIST_NAME = "shards.toml"
IDS_NAME = "shards.jsonl"
HEADER = ("# campaign-planner shard list: shards in processing order, each with its expected "
          "counts.\n# One line per document in shards.jsonl: [batch, id, offset, tokens].\n\n")




class Shard(Lax):
    """One export unit: consecutive batches, written as one file."""

    index: int
    """Shard number within a version (its file is `shard-NNNNN.npz`)."""
    documents: int
    """Documents in the shard."""
    batches: int
    """Batches in the shard."""
    first_batch: int
    """Index of its first batch in the version."""
    useful_tokens: int
    """Tokens after truncation, padding excluded."""
    padded_tokens: int
    """Tokens computed, padding included."""
    widest: int
    """Padded length of its widest batch."""
    byte: int
    """Where its lines start in the ids file."""
    bytes: int
    """Length of its lines in the ids file."""


class ShardList(Lax):
    """Every shard of one version, and what they were made from."""

    format: int = 1
    """Version of this file's layout."""
    ids_file: str
    """The ids file, next to this one."""
    ids_sha256: str
    """Its SHA-256."""
    corpus: str
    """The corpus file as given when planning."""
    corpus_format: str
    """`jsonl`, `csv`, `tsv` or `parquet`."""
    corpus_bytes: int
    """Size of the corpus when scanned."""
    id_field: str
    """Field holding the ids."""
    text_field: str
    """Field holding the texts."""
    strategy: str
    """`original` or `length-grouped`."""
    batch_size: int
    """Documents per batch (original order)."""
    token_budget: int
    """Padded tokens per batch (grouped by length)."""
    truncation_tokens: int
    """Truncation applied when counting padded tokens."""
    tokenizer_sha256: str
    """SHA-256 of the tokenizer.json that counted the tokens (empty: approximate counts)."""
    documents: int
    """Documents in all shards."""
    useful_tokens: int
    """Useful tokens in all shards."""
    padded_tokens: int
    """Padded tokens in all shards."""
    batches: int
    """Batches in all shards."""
    shards: list[Shard]
    """The shards, in processing order."""


def list_toml(sl: ShardList) -> str:
    """`shards.toml` text."""
    return HEADER + tomli_w.dumps(sl.model_dump(mode="json"))


def read_shard_list(path: str | Path, sha256: str = "") -> ShardList:
    """Read `shards.toml`, checking its SHA-256 against the plan's when given."""
    p = Path(path)
    if sha256 and p.is_file() and file_sha256(p) != sha256:
        raise InputError("SHA-256 differs from the plan's shard_list_sha256: not the shard "
                         "list this plan was made with", file=p)
    try:
        return ShardList.model_validate(read_toml(p))
    except ValidationError as exc:
        raise from_validation(exc, p) from None


def shard_lines(ids_path: str | Path, shard: Shard) -> Iterator[tuple[int, str, int, int]]:
    """(batch, id, offset, tokens) of every document of one shard, in processing order."""
    p = Path(ids_path)
    with p.open("rb") as fh:
        fh.seek(shard.byte)
        raw = fh.read(shard.bytes)
    lines = raw.splitlines()
    if len(lines) != shard.documents:
        raise InputError(f"shard {shard.index}: {len(lines)} lines where {shard.documents} "
                         "were planned", file=p)
    for line in lines:
        batch, rid, offset, tokens = json.loads(line)
        yield batch, rid, offset, tokens

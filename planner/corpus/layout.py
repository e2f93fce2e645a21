"""Laying out a scanned corpus as batches and shards, in bounded memory.

While the corpus is scanned, every document's line for the ids file is filed into a bucket
by its truncated length (one bucket in original order). Buckets are buffered in memory and
appended to temporary files when the buffers grow large. Reading the buckets from the longest
length down gives the length-grouped order without sorting; batches are then cut under the
token budget (padded length × batch ≤ budget) and shards out of whole batches.
"""

from __future__ import annotations

import atexit
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from planner.corpus.lengths import batch_rows
from planner.corpus.outputs import CorpusScan
from planner.corpus.scan import scan
from planner.corpus.shardlist import IDS_NAME, LIST_NAME, Shard, ShardList, list_toml
from planner.errors import InputError
from planner.spec.catalog import Catalog
from planner.spec.embedding import Embedding
from planner.spec.preset import Preset
from planner.tomlio import refuse_existing, write_atomic

if TYPE_CHECKING:
    from planner.figures.measurements import Measurements

FLUSH_BYTES = 64 << 20


class Buckets:
    """Lines filed by key, kept in key order on the way out, within a memory budget."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._mem: dict[int, list[bytes]] = {}
        self._size = 0
        self._on_disk: set[int] = set()

    def add(self, key: int, line: bytes) -> None:
        """File one line under `key`."""
        self._mem.setdefault(key, []).append(line)
        self._size += len(line)
        if self._size > FLUSH_BYTES:
            self.flush()

    def flush(self) -> None:
        """Append every buffer to its bucket file."""
        for key, lines in self._mem.items():
            with open(self.folder / f"{key:08d}", "ab") as fh:
                fh.writelines(lines)
            self._on_disk.add(key)
        self._mem.clear()
        self._size = 0

    def lines(self, descending: bool) -> Iterator[tuple[int, bytes]]:
        """(key, line) for every line, keys in order, lines in the order they came."""
        for key in sorted(self._on_disk | set(self._mem), reverse=descending):
            if key in self._on_disk:
                with open(self.folder / f"{key:08d}", "rb") as fh:
                    for line in fh:
                        yield key, line
            for line in self._mem.get(key, []):
                yield key, line


@dataclass
class Layout:
    """A scanned corpus laid out in shards; the files wait in `folder` until installed."""

    scan: CorpusScan
    shard_list: ShardList
    folder: Path
    list_sha256: str
    model_sha256: str = ""
    warnings: list[str] = field(default_factory=list)

    def files(self) -> list[Path]:
        """`shards.toml` and `shards.jsonl`, finished, in the temporary folder."""
        return [self.folder / LIST_NAME, self.folder / IDS_NAME]

    def install(self, out_dir: str | Path, *, force: bool = False) -> list[Path]:
        """Move `shards.toml` and `shards.jsonl` into `out_dir`."""
        out = Path(out_dir)
        targets = [out / LIST_NAME, out / IDS_NAME]
        check_free(out, force=force)
        out.mkdir(parents=True, exist_ok=True)
        for t in targets:
            shutil.move(str(self.folder / t.name), t)
        return targets

    def cleanup(self) -> None:
        """Remove the temporary folder."""
        shutil.rmtree(self.folder, ignore_errors=True)


def check_free(out: Path, *, force: bool) -> None:
    """Refuse to overwrite an existing shard list without `force`."""
    refuse_existing([out / LIST_NAME, out / IDS_NAME], force=force)


def _batches(lines: Iterator[tuple[int, bytes]], grouped: bool, batch_size: int,
             budget: int) -> Iterator[list[tuple[int, bytes]]]:
    batch: list[tuple[int, bytes]] = []
    size = batch_size
    for key, line in lines:
        if not batch and grouped:
            # Capped by documents too: hundreds of short texts in one batch are slower.
            size = batch_rows(key, budget, batch_size)
        batch.append((key, line))
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


def for_preset(preset: Preset, source: str, corpus: str, id_field: str, text_field: str, *,
               out: str | None, force: bool, catalog: Catalog | None = None,
               measurements: Measurements | None = None) -> Layout:
    """`--corpus` of the plan command: refuse early what could not be written or loaded,
    then build with the budget the plan will state (`planner.corpus.budget`)."""
    if preset.embedding is None:
        raise InputError("--corpus needs an embedding preset", file=source,
                         field="campaign.kind")
    from planner.corpus.plan_check import check_model

    check_model(preset.embedding, preset.order.packages, source=source)
    if catalog is not None:
        from planner.corpus.budget import with_budget

        preset, _ = with_budget(preset, catalog.get(preset.campaign.card), measurements)
    if out:
        check_free(Path(out), force=force)
        refuse_existing([Path(out) / "plan.toml", Path(out) / "order.toml"], force=force)
    # The worker finds the corpus relative to plan.toml: record the path from there.
    ref = (os.path.relpath(Path(corpus).resolve(), Path(out).resolve())
           if out and not Path(corpus).is_absolute() else corpus)
    assert preset.embedding is not None
    return build(corpus, preset.embedding, id_field, text_field, recorded=ref)


def build(corpus: str | Path, e: Embedding, id_field: str, text_field: str, *,
          progress: bool = True, recorded: str | None = None) -> Layout:
    """Scan the corpus with the campaign's tokenizer and lay it out as the preset says."""
    folder = Path(tempfile.mkdtemp(prefix="campaign-planner-layout-"))
    # The files wait here until installed next to plan.toml; whatever is left goes at exit.
    atexit.register(shutil.rmtree, folder, True)
    try:
        return _build(Path(corpus), e, id_field, text_field, folder, progress,
                      recorded or str(corpus))
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise


def _build(corpus: Path, e: Embedding, id_field: str, text_field: str, folder: Path,
           progress: bool, recorded: str) -> Layout:
    grouped = e.batching == "length-grouped"
    trunc = e.truncation_tokens
    buckets = Buckets(folder)

    def sink(rid: str, offset: int, tokens: int) -> None:
        key = max(1, min(trunc, tokens)) if grouped else 0
        buckets.add(key, json.dumps([rid, offset, tokens]).encode() + b"\n")

    result = scan(corpus, id_field, text_field, tokenizer=e.tokenizer, truncation=trunc,
                  batch_size=e.batch_size, token_budget=e.grouped_budget, sink=sink,
                  progress=progress, prompt=e.prompt)
    shards: list[Shard] = []
    cur: dict[str, int] = {}
    batch_no = 0
    ids_path = folder / IDS_NAME
    with ids_path.open("wb") as out:
        def close() -> None:
            if cur:
                shards.append(Shard(index=len(shards), byte=cur["byte"],
                                    bytes=out.tell() - cur["byte"], **{
                                        k: v for k, v in cur.items() if k != "byte"}))
                cur.clear()

        for batch in _batches(buckets.lines(grouped), grouped, e.batch_size, e.grouped_budget):
            docs = [json.loads(line) for _, line in batch]
            cut = [max(1, min(trunc, d[2])) for d in docs]
            if cur and cur["documents"] + len(docs) > e.shard_documents:
                close()
            if not cur:
                cur.update(documents=0, batches=0, first_batch=batch_no, useful_tokens=0,
                           padded_tokens=0, widest=0, byte=out.tell())
            width = max(cut)
            cur["documents"] += len(docs)
            cur["batches"] += 1
            cur["useful_tokens"] += sum(cut)
            cur["padded_tokens"] += width * len(docs)
            cur["widest"] = max(cur["widest"], width)
            out.writelines(json.dumps([batch_no, *d]).encode() + b"\n" for d in docs)
            batch_no += 1
        close()
    for child in folder.iterdir():
        if child.name != IDS_NAME:
            child.unlink()
    from planner.corpus.tokens import file_sha256

    sl = ShardList(
        ids_file=IDS_NAME, ids_sha256=file_sha256(ids_path), corpus=recorded,
        corpus_format=result.format, corpus_bytes=result.bytes, id_field=id_field,
        text_field=text_field, strategy=e.batching, batch_size=e.batch_size,
        token_budget=e.grouped_budget, truncation_tokens=trunc,
        tokenizer_sha256=result.tokenizer_sha256, documents=result.documents,
        useful_tokens=sum(s.useful_tokens for s in shards),
        padded_tokens=sum(s.padded_tokens for s in shards), batches=batch_no, shards=shards)
    write_atomic(folder / LIST_NAME, list_toml(sl), force=True)
    model_sha256, warnings = model_check(e)
    if result.empty:
        warnings.append(f"{result.empty:,} documents have an empty text; they are embedded "
                        "like the others (see `campaign-planner corpus scan`)")
    return Layout(scan=result, shard_list=sl, folder=folder,
                  list_sha256=file_sha256(folder / LIST_NAME), model_sha256=model_sha256,
                  warnings=warnings)


def model_check(e: Embedding) -> tuple[str, list[str]]:
    """SHA-256 of the model's weights when found here, and a warning when they are not
    (the folder's settings are judged when planning: `planner.corpus.plan_check`)."""
    from planner.corpus.folder import weights_sha256
    from planner.corpus.tokens import find_model_dir

    folder = find_model_dir(e.model)
    if folder is None:
        return "", [f"model files for {e.model!r} not found here: the plan records no "
                    "checksum of the weights; the worker records the one it loads"]
    return weights_sha256(folder), []

"""Executing an embedding plan: shard after shard, vectors exported as they are made.

A worker reads the plan and its shard list, loads the fixed encoder, and for each of its
shards reads exactly those documents from the corpus (by offset, checking every id), runs
the planned batches, and writes the shard's file and manifest entry. Only one shard's texts
and vectors are in memory at a time. Finished shards are verified and skipped, so a restart
continues where the last one stopped; a shard another worker holds is left to it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from planner.corpus.progress import Progress
from planner.corpus.records import line_of, read_at
from planner.corpus.shardlist import Shard, ShardList, read_shard_list, shard_lines
from planner.corpus.tokens import file_sha256
from planner.embed.calibration import calibrate
from planner.embed.formats import Vectors, quantize
from planner.embed.manifest import ExportDir, Manifest, ShardDone
from planner.errors import InputError
from planner.planfile.export import read_plan
from planner.planfile.plan import EmbeddingPlan, Plan


@dataclass
class Job:
    """What to embed, resolved from the plan and the command line."""

    plan: Plan
    plan_dir: Path
    shard_list: ShardList
    ids_path: Path
    corpus: Path
    versions: list[int]
    shards: list[Shard]

    @property
    def embedding(self) -> EmbeddingPlan:
        """The plan's embedding section."""
        assert self.plan.embedding is not None
        return self.plan.embedding

    def out_dir(self, version: int) -> Path:
        """A version's export folder, relative to the plan's folder."""
        for r in self.plan.runs:
            if r.kind == "embed" and r.version == version:
                return self.plan_dir / r.checkpoint_dir
        raise InputError(f"version {version} has no run in the plan", field="--version")


@dataclass
class Outcome:
    """What one invocation did."""

    done: list[tuple[int, int]] = field(default_factory=list)
    skipped: list[tuple[int, int]] = field(default_factory=list)
    busy: list[tuple[int, int]] = field(default_factory=list)
    documents: int = 0
    useful_tokens: int = 0
    seconds: float = 0.0


def resolve(plan_path: str | Path, *, versions: list[int] | None = None,
            part: tuple[int, int] | None = None, shards: list[int] | None = None,
            corpus: str | None = None) -> Job:
    """Read and check everything a run needs, before any model is loaded."""
    path = Path(plan_path)
    plan = read_plan(path)
    e = plan.embedding
    if e is None:
        raise InputError("not an embedding plan", file=path, field="campaign.kind")
    if e.corpus is None:
        raise InputError("this plan has no shard list: plan it with --corpus CORPUS",
                         file=path, field="embedding.corpus")
    c = e.corpus
    sl = read_shard_list(path.parent / c.shard_list, c.shard_list_sha256)
    ids_path = path.parent / sl.ids_file
    if not ids_path.is_file() or file_sha256(ids_path) != sl.ids_sha256:
        raise InputError("missing, or not the ids file the shard list names (SHA-256 "
                         "differs)", file=ids_path)
    src = _corpus_path(corpus or c.path, path.parent)
    if src.stat().st_size != c.bytes:
        raise InputError(f"{src.stat().st_size:,} bytes, but {c.bytes:,} were planned: not "
                         "the corpus this plan was made from", file=src)
    known = sorted({r.version for r in plan.runs if r.kind == "embed" and r.version is not None})
    unknown = [v for v in versions or [] if v not in known]
    if unknown:
        have = ", ".join(map(str, known)) or "none"
        raise InputError(f"no version {unknown[0]} in this plan (versions planned: {have})",
                         field="--version")
    wanted = sorted(set(versions)) if versions else known
    picked = sl.shards
    if shards:
        bad = [s for s in shards if not 0 <= s < len(sl.shards)]
        if bad:
            raise InputError(f"no shard {bad[0]}: the plan has shards 0–{len(sl.shards) - 1}",
                             field="--shard")
        picked = [sl.shards[s] for s in shards]
    if part is not None:
        k, n = part
        picked = [s for s in picked if s.index % n == k]
    return Job(plan, path.parent, sl, ids_path, src, wanted, picked)


def _corpus_path(given: str, plan_dir: Path) -> Path:
    p = Path(given).expanduser()
    for candidate in (plan_dir / p, p) if not p.is_absolute() else (p,):
        if candidate.is_file():
            return candidate
    raise InputError("corpus not found here: pass --corpus PATH to point at it", file=given,
                     field="embedding.corpus.path")


def header(job: Job, encoder: Any, version: int) -> Manifest:
    """The manifest settings for this job's encoder."""
    e = job.embedding
    return Manifest(
        fingerprint=encoder.fingerprint(e.settings_fingerprint),
        settings_fingerprint=e.settings_fingerprint, model=e.model,
        model_sha256=encoder.model_sha256, tokenizer=e.tokenizer,
        tokenizer_sha256=encoder.tokenizer_sha256, truncation_tokens=e.truncation_tokens,
        pooling=e.pooling, normalization=e.normalization, dtype=encoder.dtype,
        dim=encoder.dim, backend=encoder.backend, stack=encoder.stack, prompt=e.prompt,
        plan_id=job.plan.campaign.id, version=version,
        shard_list_sha256=e.corpus.shard_list_sha256 if e.corpus else "",
        format=e.format, vector_dtype=e.vector_dtype)


def check_files(job: Job, encoder: Any) -> None:
    """Refuse a model, module stack or tokenizer other than the one the plan was made with."""
    e = job.embedding
    if e.model_stack and e.model_stack != encoder.stack:
        raise InputError(f"the model folder found here defines {encoder.stack}, the plan was "
                         f"made with {e.model_stack}: not the same model",
                         field="embedding.model_stack")
    if e.backend != "auto" and e.backend != encoder.backend:
        raise InputError(f"loaded with {encoder.backend}, the plan names {e.backend}",
                         field="embedding.backend")
    for name, planned, loaded in (("model_sha256", e.model_sha256, encoder.model_sha256),
                                  ("tokenizer_sha256", e.tokenizer_sha256,
                                   encoder.tokenizer_sha256)):
        if planned and planned != loaded:
            raise InputError(f"the files found here differ from those planned with "
                             f"({loaded[:12]} vs {planned[:12]}): not the same "
                             f"{name.split('_')[0]}", field=f"embedding.{name}")


def read_texts(job: Job, rows: list[tuple[int, str, int, int]]) -> dict[int, str]:
    """The texts of these shard-list rows by offset, every id checked against the list."""
    sl = job.shard_list
    texts: dict[int, str] = {}
    planned = {offset: rid for _, rid, offset, _ in rows}
    for rec in read_at(job.corpus, planned, sl.id_field, sl.text_field):
        if rec.id != planned[rec.offset]:
            raise InputError(f"id {rec.id!r} at offset {rec.offset}, where the shard list has "
                             f"{planned[rec.offset]!r}: the corpus changed since it was "
                             "planned", file=job.corpus,
                             field=f"line {line_of(job.corpus, rec.offset)}")
        texts[rec.offset] = rec.text or ""
    return texts


def embed_shard(job: Job, encoder: Any, shard: Shard,
                on_batch: Callable[[int, int], None]) -> tuple[list[str], Any, list[int], int]:
    """Ids, float32 vectors [documents, dim], the tokens fed to the model for each document
    (after truncation, prompt and special tokens included) and the padded tokens of one
    shard."""
    import numpy as np

    rows = list(shard_lines(job.ids_path, shard))
    texts = read_texts(job, rows)
    vectors = np.empty((len(rows), encoder.dim), dtype=np.float32)
    tokens: list[int] = []
    padded = 0
    start = 0
    while start < len(rows):
        end = start
        while end < len(rows) and rows[end][0] == rows[start][0]:
            end += 1
        vectors[start:end], lengths = encoder.encode_texts([texts[r[2]] for r in
                                                            rows[start:end]])
        tokens += lengths
        padded += max(lengths) * len(lengths)
        on_batch(end - start, sum(lengths))
        start = end
    return [r[1] for r in rows], vectors, tokens, padded


class _Meter:
    """Documents and useful tokens per second, shown on the progress bar."""

    def __init__(self, title: str, total: int, shown: bool) -> None:
        self.bar = Progress(title, total) if shown and total else None
        self.docs = self.tokens = 0
        self.start = time.monotonic()

    def _rate(self) -> str:
        return f"{self.tokens / max(time.monotonic() - self.start, 1e-9):,.0f} useful tok/s"

    def batch(self, documents: int, useful: int) -> None:
        self.docs += documents
        self.tokens += useful
        if self.bar is not None:
            self.bar.update(self.docs, self._rate())

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close(self.docs, self._rate())


def run(job: Job, encoder: Any, *, progress: bool = True) -> Outcome:
    """Embed the job's shards for each of its versions; KeyboardInterrupt leaves every
    finished shard recorded and nothing half-written."""
    out = Outcome()
    check_files(job, encoder)
    started = time.monotonic()
    for version in job.versions:
        _version(job, encoder, version, out, progress)
    out.seconds = time.monotonic() - started
    return out


def _version(job: Job, encoder: Any, version: int, out: Outcome, progress: bool) -> None:
    folder = ExportDir(job.out_dir(version))
    manifest = folder.open(header(job, encoder, version))
    folder.sweep({s.index for s in job.shards})
    int8 = job.embedding.vector_dtype == "int8"
    ranges = calibrate(job, encoder, folder, read_texts) if int8 else None
    entries = {s.index: s for s in manifest.shards}
    todo = [s for s in job.shards if not folder.finished(entries.get(s.index))]
    out.skipped += [(version, s.index) for s in job.shards if s not in todo]
    meter = _Meter(f"embed v{version}", sum(s.documents for s in todo), progress)
    try:
        for shard in todo:
            lock = folder.claim(shard.index)
            if lock is None:
                out.busy.append((version, shard.index))
                continue
            try:
                current = folder.read()
                if current and folder.finished(
                        next((s for s in current.shards if s.index == shard.index), None)):
                    out.skipped.append((version, shard.index))
                    continue
                t0 = time.monotonic()
                ids, vectors, tokens, padded = embed_shard(job, encoder, shard, meter.batch)
                useful = sum(tokens)
                e = job.embedding
                data = Vectors(ids, quantize(vectors, e.vector_dtype, ranges), tokens, ranges)
                path = folder.write_shard(shard.index, data, e.format, e.vector_dtype)
                folder.record(ShardDone(
                    index=shard.index, file=path.name, sha256=file_sha256(path),
                    documents=len(ids), useful_tokens=useful, padded_tokens=padded,
                    seconds=round(time.monotonic() - t0, 3), device=encoder.device,
                    finished=datetime.now(UTC).replace(microsecond=0).isoformat()))
                out.done.append((version, shard.index))
                out.documents += len(ids)
                out.useful_tokens += useful
            finally:
                lock.close()
    finally:
        meter.close()

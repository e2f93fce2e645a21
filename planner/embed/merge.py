"""`embed PLAN --merge`: a finished version's shards as one file, in the corpus's order.

Shards follow the batches (grouped by length); many users want one file per version whose
rows follow the corpus, line by line. The merge checks the version first (every shard
there, intact, with its planned ids), orders the rows by their place in the corpus (the
byte offset of a JSON Lines record, the row of a Parquet one), writes the file atomically
in the plan's format and vector type next to the shards (`merged.<format>`), and records it
with its SHA-256 in the manifest, where `--check` verifies it. The whole version is held in
memory while it is written.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from planner.corpus.shardlist import shard_lines
from planner.corpus.tokens import file_sha256
from planner.embed.check import check
from planner.embed.formats import Vectors, load
from planner.embed.manifest import ExportDir, MergedFile, merged_file, write_vectors
from planner.embed.worker import Job
from planner.errors import InputError


@dataclass
class Merged:
    """One merged version."""

    version: int
    path: Path
    documents: int


def merge(job: Job) -> list[Merged]:
    """Merge each of the job's versions; refuses a partial job or an unfinished version."""
    import numpy as np

    if len(job.shards) != len(job.shard_list.shards):
        raise InputError("--merge takes whole versions: leave out --part and --shard",
                         field="--merge")
    out = []
    for vc in check(job):
        if not vc.shards_sound:
            raise InputError(f"v{vc.version} is not complete ({vc.finished} of {vc.shards} "
                             "shards sound): finish it first (embed --check says what is "
                             "missing)", field="--merge")
        folder = ExportDir(job.out_dir(vc.version))
        manifest = folder.read()
        assert manifest is not None
        entries = {s.index: s for s in manifest.shards}
        ids: list[str] = []
        parts, tokens, offsets = [], [], []
        for shard in job.shards:
            data = load(folder.path / entries[shard.index].file, manifest.format)
            ids += data.ids
            parts.append(data.vectors)
            if data.tokens is not None:
                tokens.append(data.tokens)
            offsets += [offset for _, _, offset, _ in shard_lines(job.ids_path, shard)]
        order = np.argsort(np.array(offsets, dtype=np.int64), kind="stable")
        vectors = np.concatenate(parts)[order]
        merged = Vectors([ids[i] for i in order], vectors,
                         np.concatenate(tokens)[order] if len(tokens) == len(parts) else None,
                         np.asarray(manifest.ranges, dtype=np.float32)
                         if manifest.ranges is not None else None)
        path = _write(folder.path / merged_file(manifest.format), merged, manifest.format,
                      manifest.vector_dtype)
        folder.record_merged(MergedFile(file=path.name, sha256=file_sha256(path),
                                        documents=len(merged.ids)))
        out.append(Merged(vc.version, path, len(merged.ids)))
    return out


def _write(final: Path, data: Vectors, fmt: str, vector_dtype: str) -> Path:
    return write_vectors(final, data, fmt, vector_dtype, "the merged file", "the shards are intact")

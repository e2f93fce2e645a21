"""Checking a version's exports against the plan: every shard there, intact, holding exactly
the ids the shard list gives it, so the corpus is covered with no gap and no duplicate."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.corpus.shardlist import shard_lines
from planner.corpus.tokens import file_sha256
from planner.embed.formats import STORED, load
from planner.embed.manifest import ExportDir, MergedFile, merged_file
from planner.embed.worker import Job


@dataclass
class VersionCheck:
    """What one version's export folder holds."""

    version: int
    folder: str
    shards: int
    finished: int = 0
    documents: int = 0
    useful_tokens: int = 0
    missing: list[int] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    """What is wrong with the merged file the manifest records."""

    @property
    def shards_sound(self) -> bool:
        """Every shard finished and sound."""
        return not self.missing and not self.problems

    @property
    def complete(self) -> bool:
        """Every shard finished and sound, and the merged file too when there is one."""
        return self.shards_sound and not self.merged


def check(job: Job) -> list[VersionCheck]:
    """Check the job's shards in each of its versions (reads every shard file)."""
    out = []
    for version in job.versions:
        folder = ExportDir(job.out_dir(version))
        vc = VersionCheck(version, str(folder.path), len(job.shards))
        manifest = folder.read()
        entries = {s.index: s for s in manifest.shards} if manifest else {}
        fmt = manifest.format if manifest else job.embedding.format
        dtype = manifest.vector_dtype if manifest else job.embedding.vector_dtype
        if manifest and (fmt, dtype) != (job.embedding.format, job.embedding.vector_dtype):
            vc.problems.append(f"the exports are {dtype} {fmt}, the plan asks for "
                               f"{job.embedding.vector_dtype} {job.embedding.format}")
        for shard in job.shards:
            entry = entries.get(shard.index)
            if entry is None:
                vc.missing.append(shard.index)
                continue
            if not folder.finished(entry):
                vc.problems.append(f"shard {shard.index}: {entry.file} is missing or its "
                                   "SHA-256 differs from the manifest")
                continue
            try:
                data = load(folder.path / entry.file, fmt)
            except Exception as exc:  # any unreadable file is a finding, not a crash
                vc.problems.append(f"shard {shard.index}: {entry.file} cannot be read as "
                                   f"{fmt}: {exc}")
                continue
            ids, rows = data.ids, data.vectors.shape[0]
            planned = [rid for _, rid, _, _ in shard_lines(job.ids_path, shard)]
            if ids != planned or rows != len(planned):
                vc.problems.append(f"shard {shard.index}: holds {len(ids)} ids and {rows} "
                                   f"vectors, not the {len(planned)} ids planned")
                continue
            if str(data.vectors.dtype) != STORED[dtype] or (
                    data.tokens is not None and int(data.tokens.sum()) != entry.useful_tokens):
                vc.problems.append(f"shard {shard.index}: holds {data.vectors.dtype} vectors "
                                   "or token counts other than the manifest records")
                continue
            vc.finished += 1
            vc.documents += len(ids)
            vc.useful_tokens += entry.useful_tokens
        if manifest is not None and manifest.merged is not None:
            vc.merged = merged_problems(folder, manifest.merged, fmt)
        out.append(vc)
    return out


def merged_problems(folder: ExportDir, merged: MergedFile, fmt: str) -> list[str]:
    """What is wrong with the merged file the manifest records (nothing: [])."""
    # The name is the one `--merge` writes, never a path taken from the file.
    path = folder.path / merged_file(fmt)
    if merged.file != path.name or not path.is_file() or file_sha256(path) != merged.sha256:
        return [f"{merged.file} (merged) is missing or its SHA-256 differs from the manifest"]
    if len(load(path, fmt).ids) != merged.documents:
        return [f"{merged.file} (merged) does not hold the {merged.documents:,} documents "
                "recorded"]
    return []

"""Checking a version's exports against the plan: every shard there, intact, holding exactly
the ids the shard list gives it, so the corpus is covered with no gap and no duplicate."""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.corpus.shardlist import shard_lines
from planner.embed.manifest import ExportDir
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

    @property
    def complete(self) -> bool:
        """Every shard finished and sound."""
        return not self.missing and not self.problems


def check(job: Job) -> list[VersionCheck]:
    """Check the job's shards in each of its versions (reads every shard file)."""
    import numpy as np

    out = []
    for version in job.versions:
        folder = ExportDir(job.out_dir(version))
        vc = VersionCheck(version, str(folder.path), len(job.shards))
        manifest = folder.read()
        entries = {s.index: s for s in manifest.shards} if manifest else {}
        for shard in job.shards:
            entry = entries.get(shard.index)
            if entry is None:
                vc.missing.append(shard.index)
                continue
            if not folder.finished(entry):
                vc.problems.append(f"shard {shard.index}: {entry.file} is missing or its "
                                   "SHA-256 differs from the manifest")
                continue
            with np.load(folder.path / entry.file, allow_pickle=False) as data:
                ids = data["ids"].tolist()
                rows = data["vectors"].shape[0]
            planned = [rid for _, rid, _, _ in shard_lines(job.ids_path, shard)]
            if ids != planned or rows != len(planned):
                vc.problems.append(f"shard {shard.index}: holds {len(ids)} ids and {rows} "
                                   f"vectors, not the {len(planned)} ids planned")
                continue
            vc.finished += 1
            vc.documents += len(ids)
            vc.useful_tokens += entry.useful_tokens
        out.append(vc)
    return out

"""Progress a run reports: one small JSON file, `{"step": N}`, that the executor samples.

The executor (and a SLURM task) sets `CAMPAIGN_PROGRESS` to `<checkpoint_dir>/<run id>
.progress.json`; a training script writes its step there whenever it likes. The file is
read the way any file a run wrote is read: never through a link, at most a few kilobytes,
and anything that is not a JSON object with a whole, non-negative `step` is ignored, so a
script half-way through a write never stops the executor. The journal keeps one sample per
run at most once a minute (`PROGRESS_EVERY_S`): enough to measure a rate, few enough lines.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from planner.planning.plan import Run
from planner.spec import bounds

ENV = "CAMPAIGN_PROGRESS"
"""The environment variable naming the run's progress file."""
PROGRESS_EVERY_S = 60.0
"""Seconds between two journalled samples of one run."""
MAX_BYTES = 4096
"""A progress file longer than this is not one."""
MAX_STEP = 10**12
MAX_PEAK_BYTES = int(bounds.CARD_GIB) * 2**30
"""A peak above any card's memory is not a report (bytes counted in another unit)."""


def progress_path(workdir: Path, run: Run) -> Path:
    """The run's progress file; named by run, since an evaluation shares its run's folder."""
    return workdir / run.checkpoint_dir / f"{run.id}.progress.json"


@dataclass(frozen=True)
class Report:
    """One reading of a progress file: the required step and the optional fields of the run
    contract, each None when absent or not of its type."""

    step: int
    peak_memory_bytes: int | None = None
    """The process's peak allocated memory on its device, so far."""
    warmup: bool = False
    """True while the steps reported are warm-up (compilation) that must not be timed."""
    checkpoint_step: int | None = None
    """The global step of the last checkpoint saved at the resume path."""
    mtime: float = 0.0
    """When the file was last written (seconds since the epoch): a report's own time."""


def _whole(value: object, top: int = MAX_STEP) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= top:
        return None
    return value


def read_report(path: Path) -> Report | None:
    """What the file reports, or None: absent, a link, not a plain file, too long, not
    JSON, or no whole step in it. An optional field of the wrong type is dropped, never a
    reason to ignore the report."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        raw = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(raw) > MAX_BYTES:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict):
        return None
    step = _whole(data.get("step"))
    if step is None:
        return None
    warmup = data.get("warmup")
    peak = _whole(data.get("peak_memory_bytes"), MAX_PEAK_BYTES)
    return Report(step=step, peak_memory_bytes=peak,
                  warmup=warmup if isinstance(warmup, bool) else False,
                  checkpoint_step=_whole(data.get("checkpoint_step")), mtime=info.st_mtime)


def read_step(path: Path) -> int | None:
    """The step the file reports, or None (see `read_report`)."""
    report = read_report(path)
    return None if report is None else report.step


@dataclass
class Sampler:
    """Which samples go into the journal: a new step, no sooner than `every` seconds after the
    run's last journalled one."""

    workdir: Path
    every: float = PROGRESS_EVERY_S
    last: dict[str, tuple[float, int]] = field(default_factory=dict)

    def forget(self, run: Run) -> None:
        """A new attempt begins: an earlier attempt's file no longer speaks for it."""
        self.last.pop(run.id, None)
        with contextlib.suppress(OSError):
            progress_path(self.workdir, run).unlink()

    def due(self, run: Run, now: float) -> int | None:
        """The step to journal now, or None."""
        seen = self.last.get(run.id)
        if seen is not None and now - seen[0] < self.every:
            return None
        step = read_step(progress_path(self.workdir, run))
        if step is None or (seen is not None and step == seen[1]):
            return None
        self.last[run.id] = (now, step)
        return step

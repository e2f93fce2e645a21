"""Progress a run reports: one small JSON file, `{"step": N, ...}`, that the executor samples.

The executor (and a SLURM task) sets `CAMPAIGN_PROGRESS` to `<checkpoint_dir>/<run id>
.progress.json`; a training script writes its step there whenever it likes, and may add
`warmup` (true while its steps must not be timed) and `checkpoint_step` (the step of the
checkpoint it last saved at its resume path). The file is read the way any file a run wrote
is read: never through a link, at most a few kilobytes, and anything that is not a JSON
object with a whole, non-negative `step` is ignored, so a script half-way through a write
never stops the executor. When the run wrote it is the file's modification time.

The journal keeps the first step a run reports at once, the next ones `EARLY_S` apart
until two timed samples exist (an observed step time needs two), and then one sample per
run at most once a minute (`PROGRESS_EVERY_S`): a rate early, few lines later. A new
`checkpoint_step` is journalled at once, whatever the pace.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from planner.hooks.env import PROGRESS
from planner.planfile.plan import Run
from planner.spec import bounds

ENV = PROGRESS
"""The environment variable naming the run's progress file (`planner.hooks.env`)."""
PROGRESS_EVERY_S = 60.0
"""Seconds between two journalled samples of one run, once it has a step time."""
EARLY_S = 5.0
"""Seconds between the first samples of an attempt, until two timed ones exist."""
MAX_BYTES = 4096
"""A progress file longer than this is not one."""
MAX_STEP = 2**31
"""The largest step read: the journal keeps whole numbers up to this."""
KEEP = 4
"""Reports of a run kept in memory: the newest one read before a checkpoint appeared is
among them."""
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
    """The step the file reports, or None (`read_report`)."""
    report = read_report(path)
    return None if report is None else report.step


@dataclass
class Sampler:
    """Which reports go into the journal: a new step, the first at once, the next `EARLY_S`
    apart until two timed ones were journalled, then no sooner than `every` seconds after
    the run's last journalled one; a new checkpoint step at once."""

    workdir: Path
    every: float = PROGRESS_EVERY_S
    last: dict[str, tuple[float, int, int | None]] = field(default_factory=dict)
    """Per run: (time, step, checkpoint step) of its last journalled report."""
    timed: dict[str, int] = field(default_factory=dict)
    """Per run: timed reports journalled in this attempt."""
    reads: dict[str, list[Report]] = field(default_factory=dict)
    """Per run: its newest distinct reports read, oldest first."""

    def forget(self, run: Run) -> None:
        """A new attempt begins: an earlier attempt's file no longer speaks for it."""
        for kept in (self.last, self.timed, self.reads):
            kept.pop(run.id, None)
        with contextlib.suppress(OSError):
            progress_path(self.workdir, run).unlink()

    def read(self, run: Run) -> Report | None:
        """The run's report now, remembered for `before`."""
        report = read_report(progress_path(self.workdir, run))
        if report is not None:
            kept = self.reads.setdefault(run.id, [])
            if not kept or kept[-1] != report:
                kept.append(report)
                del kept[:-KEEP]
        return report

    def before(self, run: Run, mtime: float) -> int | None:
        """The newest step the run reported no later than `mtime` (a checkpoint's), among
        the reports read: the checkpoint holds at least that step."""
        steps = [r.step for r in self.reads.get(run.id, []) if r.mtime <= mtime]
        return max(steps, default=None)

    def due(self, run: Run, now: float, report: Report | None = None, *,
            final: bool = False) -> Report | None:
        """The report to journal now (`report`, or the file read now), or None; `final`:
        the attempt has ended, so a new step goes in whatever the pace."""
        if report is None:
            report = self.read(run)
        if report is None:
            return None
        seen = self.last.get(run.id)
        new_checkpoint = report.checkpoint_step is not None and (
            seen is None or report.checkpoint_step != seen[2])
        if seen is not None and not new_checkpoint:
            if report.step == seen[1]:
                return None
            early = self.timed.get(run.id, 0) < 2
            gap = 0.0 if final else min(self.every, EARLY_S) if early else self.every
            if now - seen[0] < gap:
                return None
        self.last[run.id] = (now, report.step, report.checkpoint_step)
        if not report.warmup:
            self.timed[run.id] = self.timed.get(run.id, 0) + 1
        return report


def event_fields(report: Report) -> dict[str, object]:
    """A report as a `progress` event's fields."""
    out: dict[str, object] = {"step": report.step, "at": round(report.mtime, 3)}
    if report.warmup:
        out["warmup"] = True
    if report.checkpoint_step is not None:
        out["checkpoint_step"] = report.checkpoint_step
    return out

"""The step an interrupted run resumes from, and a new attempt that ignored it.

The step comes from the checkpoint the run will resume from: the step the run recorded for
it (`checkpoint_step` in its progress file), or else the newest step it reported before
that checkpoint was written (its modification time), which the checkpoint holds at least.
Both are read from the journal and, for a run that is not running, from the files
themselves (an executor killed with its runs journalled neither). Steps are global: after
a resume a run counts on from its checkpoint, so every attempt since the run's last fresh
start speaks of the same line of checkpoints.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.planfile.plan import Run
from planner.run.journal import RunRecord
from planner.run.progress import Report, progress_path, read_report

RECORDED = "the step its checkpoint recorded"
AT_LEAST = "reported before its latest checkpoint"
SLACK_S = 2.0
"""Seconds a progress file may seem older than its attempt's start (clocks of file
systems and of the executor differ that much at most) and still be that attempt's."""


@dataclass(frozen=True)
class Resume:
    """Where an interrupted run resumes."""

    step: int
    """0: from the start (nothing says more)."""
    recorded: bool
    """True: the run recorded this step for the checkpoint; False: a lower bound."""

    @property
    def how(self) -> str:
        """How the step is known, in words."""
        return RECORDED if self.recorded else AT_LEAST

    def words(self, steps: int) -> str:
        """`step 20/30`, or `step 20/30 at least` for a lower bound."""
        return f"step {self.step}/{steps}" + ("" if self.recorded else " at least")


NONE = Resume(0, False)


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _epoch(trace: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The events since the run's last fresh start (one that resumed from nothing)."""
    start = 0
    for i, e in enumerate(trace):
        if e["ev"] == "started" and not e.get("resume"):
            start = i
    return trace[start:]


def resume_step(run: Run, rec: RunRecord, checkpoint_mtime: float | None = None,
                report: Report | None = None) -> Resume:
    """The step the run's checkpoint holds, from its journal trace and, when given, the
    checkpoint's modification time and the progress file's report as they are now."""
    if run.kind != "train" or not run.steps:
        return NONE
    events = _epoch(rec.trace)
    marks = [e["mtime"] for e in events if e["ev"] == "checkpointed" and _number(e.get("mtime"))]
    if checkpoint_mtime is not None:
        marks.append(checkpoint_mtime)
    if not marks:
        return NONE
    written = max(marks)
    recorded = [e["checkpoint_step"] for e in events if e["ev"] == "progress"
                and isinstance(e.get("checkpoint_step"), int)]
    bounds = [e["step"] for e in events if e["ev"] == "checkpointed"
              and isinstance(e.get("step"), int)]
    bounds += [e["step"] for e in events if e["ev"] == "progress"
               and (e["at"] if _number(e.get("at")) else e["t"]) <= written]
    if report is not None:
        if report.checkpoint_step is not None:
            recorded.append(report.checkpoint_step)
        if report.mtime <= written:
            bounds.append(report.step)
    best_recorded, best_bound = max(recorded, default=0), max(bounds, default=0)
    step = min(max(best_recorded, best_bound), run.steps)
    return Resume(step, best_recorded > 0 and best_recorded >= best_bound)


def resume_from(run: Run, rec: RunRecord, workdir: Path | None) -> Resume:
    """Where a run that ran before resumes, its checkpoint and progress file looked at now
    (NONE: no checkpoint there, or nothing says which step it holds)."""
    if not rec.attempts or workdir is None or run.kind != "train":
        return NONE
    try:
        mtime = (workdir / run.resume).lstat().st_mtime
    except OSError:
        return NONE
    report = read_report(progress_path(workdir, run))
    if report is not None and rec.started is not None and report.mtime < rec.started - SLACK_S:
        report = None  # left by an attempt before the latest one
    return resume_step(run, rec, mtime, report)


def ignored(run: Run, expected: Resume, step: int) -> str | None:
    """Why an attempt that resumed from a checkpoint holding `expected` but reports `step`
    ignored its resume path, or None."""
    if expected.step <= 0 or step >= expected.step:
        return None
    holds = f"step {expected.step}" + ("" if expected.recorded else " at least")
    return (f"{run.id} ignored its resume path: its checkpoint {run.resume} holds {holds}, "
            f"but the new attempt reported step {step}; the command must resume from "
            "{resume} ($CAMPAIGN_RESUME) and count on from its step")

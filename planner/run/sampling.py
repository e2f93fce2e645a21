"""What running runs report and save, journalled by the executor: the steps their progress
files report (`planner.run.progress`, paced by its `Sampler`), each new checkpoint with the
step it holds at least, and a resumed run that reports a step below its checkpoint's,
stopped at once and failed (it ignored its resume path: never a silent restart)."""

from __future__ import annotations

import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.planfile.plan import Run
from planner.run.procs import signal_group
from planner.run.progress import Sampler, event_fields
from planner.run.resume import NONE, Resume, ignored


@dataclass
class Active:
    """A run whose process group is alive: started here, or adopted from a dead executor."""

    run: Run
    attempt: int
    cards: list[int]
    process: dict[str, Any]
    proc: subprocess.Popen[bytes] | None
    started: float
    seen_checkpoint: float | None = None
    expect: Resume = NONE
    """The step the checkpoint it resumed from holds, until a report shows it went on."""
    refused: str = ""
    """Why the executor stopped it and fails it (it ignored its resume path)."""


class Sampling:
    """The executor's eyes on its running runs."""

    def __init__(self, progress: Sampler, event: Callable[..., None],
                 say: Callable[[str], None]) -> None:
        self.progress, self.event, self.say = progress, event, say

    @property
    def workdir(self) -> Path:
        return self.progress.workdir

    def checkpoint_mtime(self, run: Run) -> float | None:
        """When the run's resume path last changed (None: no checkpoint, or not a run
        with checkpoints of its own)."""
        if run.kind != "train":  # others read or share a folder: nothing of their own to see
            return None
        try:
            return (self.workdir / run.resume).lstat().st_mtime
        except OSError:
            return None

    def sample(self, a: Active, now: float, *, final: bool = False) -> None:
        """Journal the step a run reports, and a checkpoint when a training run's resume
        path changes, with the step it holds at least; stop a run that resumed but reports
        a step below its checkpoint's. `final`: the attempt has ended."""
        report = self.progress.read(a.run)
        if report is not None and a.expect.step and not a.refused:
            why = ignored(a.run, a.expect, report.step)
            if why:
                # At once, before it saves a checkpoint over the one it ignored.
                a.refused = why
                self.say(f"stopping {a.run.id}: {why}")
                signal_group(a.process["pid"], signal.SIGKILL)
            else:
                a.expect = NONE
        due = self.progress.due(a.run, now, report, final=final)
        if due is not None:
            self.event("progress", run=a.run.id, attempt=a.attempt, **event_fields(due))
        mtime = self.checkpoint_mtime(a.run)
        if mtime is not None and mtime != a.seen_checkpoint:
            a.seen_checkpoint = mtime
            step = self.progress.before(a.run, mtime)
            self.event("checkpointed", run=a.run.id, attempt=a.attempt, mtime=mtime,
                       **({} if step is None else {"step": step}))

"""A journal or a SLURM trace written by real processes, put on a timeline of given times.

A test that runs the executor (or a SLURM task) for real keeps what the processes did:
which runs started, reported steps, checkpointed and exited, in which order, on which
cards, with which fields. Only the times are replaced: each attempt reports every step at
exactly its variant's planned step time × a given ratio. What the trainer's sleeps and the
machine's load made of the real times is gone, so an observed step time, a pace or a
replan's decision read back from the file is known to the digit, however loaded the
machine.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.planfile.plan import Plan
from planner.run.observe import planned_step_s
from planner.run.progress import progress_path

Event = dict[str, Any]


@dataclass
class _Attempt:
    number: int
    start: float
    step_s: float
    lanes: list[int]
    sent: int = 0
    """The last step sampled here."""
    seen: int = 0
    """The last step the run reported."""
    reported: list[tuple[float, int]] = field(default_factory=list)
    """The real (time, step) of each sample the run reported."""

    def at(self, step: int) -> float:
        return self.start + step * self.step_s


def given_times(events: list[Event], plan: Plan, ratios: Mapping[str, float], t0: float,
                gap: float = 1.0) -> tuple[list[Event], float]:
    """(the events on the given timeline, the time its last event reached).

    An attempt starts `gap` seconds after the last attempt on its cards ended, and after
    every exit before it in the file (a run that evaluates another starts after it). Its
    reported steps give way to one sample a step up to the furthest step it reached (all
    of them when it finished), so the figures do not hang on how many samples the sampler
    caught; a checkpoint holds the last step reported before its file was written. Events
    of no run stand at the latest time reached (a `window_start` they carry is `t0`).
    Fresh attempts only (no training run resumes a checkpoint)."""
    runs = {r.id: r for r in plan.runs}
    per_step = planned_step_s(plan)
    out: list[Event] = []
    lane_end: dict[int, float] = {}
    exited = reached = t0
    open_: dict[str, _Attempt] = {}

    def upto(a: _Attempt, step: int, run_id: str) -> None:
        for k in range(a.sent + 1, step + 1):
            out.append({"t": a.at(k), "ev": "progress", "run": run_id, "attempt": a.number,
                        "step": k})
        a.sent = max(a.sent, step)

    for e in events:
        run = runs.get(e.get("run", ""))
        if run is None:
            out.append({**e, "t": reached, **({"window_start": t0} if "window_start" in e
                                              else {})})
            continue
        if e["ev"] == "started":
            assert run.id not in open_, f"{run.id} started twice at once"
            assert not (e.get("resume") and run.kind == "train"), "fresh attempts only"
            lanes = list(e.get("cards") or [0])
            start = max([exited, *(lane_end.get(c, t0) for c in lanes)]) + gap
            a = open_[run.id] = _Attempt(e["attempt"], start,
                                         per_step.get(run.variant, 0.0)
                                         * ratios.get(run.variant, 1.0), lanes)
            out.append({**e, "t": start})
            reached = max(reached, start)
            continue
        a = open_[run.id]
        if e["ev"] == "progress":
            a.seen = max(a.seen, int(e["step"]))
            a.reported.append((e["t"], a.seen))
            upto(a, a.seen, run.id)
        elif e["ev"] == "checkpointed":
            # Written at the last step reported before the file's real time, seen now.
            held = max((k for t, k in a.reported if t <= e["mtime"]), default=0)
            out.append({**e, "t": a.at(a.seen), "mtime": a.at(held)})
        elif e["ev"] == "exited":
            last = run.steps if e.get("outcome") == "finished" else a.seen
            upto(a, last, run.id)
            end = a.at(last)
            out.append({**e, "t": end})
            del open_[run.id]
            for c in a.lanes:
                lane_end[c] = end
            exited = max(exited, end)
        else:
            out.append({**e, "t": a.at(a.seen)})
        reached = max(reached, out[-1]["t"])
    return out, reached


def rewrite(path: Path, plan: Plan, ratios: Mapping[str, float], t0: float,
            gap: float = 1.0, workdir: Path | None = None) -> float:
    """`given_times` on a JSON-lines file, in place; the time its last event reached. With
    `workdir`, the runs' checkpoints and progress files there follow (`align_files`)."""
    events = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    given, end = given_times(events, plan, ratios, t0, gap)
    path.write_text("".join(json.dumps(e) + "\n" for e in given))
    if workdir is not None:
        align_files(workdir, plan, given)
    return end


def align_files(workdir: Path, plan: Plan, given: list[Event]) -> None:
    """Put each stopped run's checkpoint and progress file on the given timeline too.

    What a run's checkpoint holds is read from its file's modification time against the
    journal's reports: left on the real clock, the file would seem written after every
    given report, and hold the furthest step reported rather than the one it was written
    at. A checkpoint takes the given `mtime` of its last `checkpointed` event (none
    journalled: its attempt's start, so it holds step 0 at least); a progress file the time
    of its run's last given report."""
    for run in plan.runs:
        mine = [e for e in given if e.get("run") == run.id]
        if not mine:
            continue
        start = max(e["t"] for e in mine if e["ev"] == "started")
        marks = [e["mtime"] for e in mine if e["ev"] == "checkpointed" and e["t"] >= start]
        reports = [e["t"] for e in mine if e["ev"] == "progress"]
        for path, t in ((workdir / run.resume, max(marks, default=start)),
                        (progress_path(workdir, run), max(reports, default=start))):
            if path.exists():
                os.utime(path, (t, t), follow_symlinks=False)

"""SLURM runs as a journal would tell them: each run's trace beside its checkpoints.

A SLURM task (`slurm_task.py`) writes no journal; it keeps `<run id>.attempts.jsonl` in
the run's checkpoint folder instead, in the journal's own event format: each attempt's
`started` and `exited`, a few `progress` samples and its latest `checkpointed`. Folded
like journal events, they give the run's state and observed step time the same way an
executor's journal does. The trace is read as anything a run's folder holds is read: never
through a link, at most `MAX_BYTES`, and a line that is not an event of this run is
skipped, never an error. A run whose trace says it is running is running while its task
holds the run's lock (probed for an instant, as `status` probes the executor's).

A campaign run by SLURM alone has no session: its window is taken to start when its first
task started its first run, less the plan's hours before the first run may start, as the
first `campaign-planner run` session takes it.
"""

from __future__ import annotations

import json
import os
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

from planner.planfile.plan import Plan, Run
from planner.run.journal import History, RunRecord, shape_problem
from planner.run.once import folders_present, lock_path, run_folder
from planner.run.params import run_fingerprint

MAX_BYTES = 64 * 1024
"""A trace longer than this is not read (the task keeps it to a few dozen lines)."""
EVENTS = ("started", "progress", "checkpointed", "exited")
SOURCE = "slurm"
"""`plan["source"]` of a history made from traces alone."""


def trace_path(workdir: Path, run: Run) -> Path:
    """`<checkpoint_dir>/<run id>.attempts.jsonl`: named by run, since evaluations share
    their run's folder."""
    return run_folder(workdir, run) / f"{run.id}.attempts.jsonl"


def _read(path: Path) -> bytes:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        raw = os.read(fd, MAX_BYTES + 1)
    except OSError:
        return b""
    finally:
        os.close(fd)
    return b"" if len(raw) > MAX_BYTES else raw


def read_trace(workdir: Path, run: Run) -> list[dict[str, Any]]:
    """The run's trace events, in order; [] when there is none to read."""
    out = []
    for line in _read(trace_path(workdir, run)).splitlines():
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue
        if shape_problem(event) is None and event["ev"] in EVENTS \
                and event.get("run") == run.id:
            out.append(event)
    return out


def trace_record(workdir: Path, run: Run, until: float | None = None) -> RunRecord | None:
    """The run's record from its trace (events after `until` unread), or None when the
    trace says nothing of the run with these parameters."""
    h = History()
    for e in read_trace(workdir, run):
        if until is not None and e["t"] > until:
            break
        # A task's cards are the node's; the run holds its planned card slots.
        h.apply({**e, "cards": list(run.card)} if e["ev"] == "started" else e)
    rec = h.runs.get(run.id)
    if rec is None or rec.fingerprint != run_fingerprint(run):
        return None
    if rec.state == "running":
        rec.process = {"lock": str(lock_path(workdir, run))}
    return rec


def with_traces(plan: Plan, hist: History, workdir: Path, until: float | None = None,
                present: set[str] | None = None) -> History:
    """`hist` with each run the journal has nothing of (under its current parameters)
    told by its SLURM trace, and a window and campaign when no session gave them.
    `present`: the runs' folders found, when the caller has looked already
    (`folders_present`)."""
    runs = dict(hist.runs)
    first: float | None = None
    every = [*plan.runs, *plan.held]
    if present is None:  # a trace lives in its run's folder
        present = folders_present(workdir, every)
    for run in every if present else ():
        if run.checkpoint_dir not in present:
            continue
        have = runs.get(run.id)
        if have is not None and have.state != "pending" \
                and have.fingerprint == run_fingerprint(run):
            continue
        rec = trace_record(workdir, run, until)
        if rec is None:
            continue
        runs[run.id] = rec
        if rec.first_start is not None:
            first = rec.first_start if first is None else min(first, rec.first_start)
    if first is None:
        return hist
    out = replace(hist, runs=runs)
    if out.plan is None:
        out.plan = {"campaign": plan.campaign.id, "path": "", "source": SOURCE}
    if out.window_start is None:
        out.window_start = first - plan.campaign.usable_from_h * 3600
    return out

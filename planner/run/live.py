"""The figures of a running plan, made in one place: what `status`, `status --json`, the
Progress screen and `replan` all show. The journal (with SLURM runs' traces and done
records) gives each run's record, and a running run's progress file the step it reports
now (the journal keeps a sample a minute); the observed step times come from those
records (`planner.run.observe.rates`); the step an interrupted run resumes from, from its
checkpoint (`planner.run.resume`)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from operator import attrgetter
from pathlib import Path

from planner.planfile.plan import Plan, Run
from planner.run.journal import History, RunRecord, Workspace
from planner.run.observe import Rate, rates, with_done_records
from planner.run.once import folders_present
from planner.run.params import run_fingerprint
from planner.run.progress import event_fields, progress_path, read_report
from planner.run.resume import SLACK_S
from planner.run.slurm_trace import with_traces

_ID = attrgetter("id")


@dataclass(frozen=True)
class Live:
    """A plan's journal read at one moment."""

    hist: History
    """The journal folded, with the runs SLURM tasks told in their traces."""
    recs: dict[str, RunRecord]
    """Each run's record (held runs too) under its current parameters."""
    observed: dict[str, Rate]
    """Each configuration's step time, observed or not yet."""
    present: set[str]
    """The runs' folders found (`folders_present`)."""


def current(plan: Plan, hist: History, held: bool = False) -> dict[str, RunRecord]:
    """Each plan run's record (with `held`, each held run's too) under its current
    parameters, to read: the runs without one share a single pending record (a plan of
    100,000 runs makes none of its own)."""
    pending = RunRecord("")
    runs = [*plan.runs, *plan.held] if held else plan.runs
    out = dict.fromkeys(map(_ID, runs), pending)
    records = hist.runs
    if records:
        for run in runs:
            rec = records.get(run.id)
            if rec and rec.fingerprint == run_fingerprint(run):
                out[run.id] = rec
    return out


def live(plan: Plan, hist: History, ws: Workspace, now: float) -> Live:
    """The figures of `plan` against its journal at POSIX time `now`."""
    every = [*plan.runs, *plan.held]
    # One look at the runs' folders, for their traces and their done records alike.
    present = folders_present(ws.workdir, every)
    hist = with_traces(plan, hist, ws.workdir, until=now, present=present)
    recs = with_done_records(every, current(plan, hist, held=bool(plan.held)), ws.workdir,
                             present)
    recs = with_reported_now(every, recs, ws.workdir, now)
    return Live(hist, recs, rates(plan, recs), present)


def with_reported_now(runs: list[Run], recs: dict[str, RunRecord], workdir: Path,
                      now: float) -> dict[str, RunRecord]:
    """`recs` with each running run's progress file read as one more sample, at the time
    the run wrote it, when its step is newer than the journal's and written by `now` in
    the current attempt."""
    out = recs
    for run in runs:
        rec = recs.get(run.id)
        if rec is None or rec.state != "running" or rec.started is None:
            continue
        report = read_report(progress_path(workdir, run))
        if report is None or not rec.started - SLACK_S <= report.mtime <= now:
            continue
        steps = [e["step"] for e in rec.trace
                 if e["ev"] == "progress" and e.get("attempt") == rec.attempts]
        if steps and steps[-1] >= report.step:
            continue
        sample = {"t": report.mtime, "ev": "progress", "run": run.id,
                  "attempt": rec.attempts, **event_fields(report)}
        if out is recs:
            out = dict(recs)
        out[run.id] = replace(rec, trace=[*rec.trace, sample])
    return out

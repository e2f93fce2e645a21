"""Where a running plan stands: each run's state, actual against planned times, and the
projected end against the window's end. Reads only; writes nothing."""

from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass
from operator import attrgetter, itemgetter, sub
from typing import Any

from planner.planning.plan import Plan, Run
from planner.planning.schedule import schedule
from planner.run.clock import capacity_left, hours_left, rates, run_fields
from planner.run.journal import History, RunRecord, Workspace
from planner.run.observe import startup_s, with_done_records
from planner.run.once import folders_present, lock_held
from planner.run.params import run_fingerprint
from planner.run.procs import alive
from planner.run.slurm_trace import with_traces
from planner.run.status_render import Fresh, expand, fits_of, render

GROUPS = ("done", "running", "pending", "failed", "blocked")
_ID = attrgetter("id")
_CARD = attrgetter("card")
_DEPENDS = attrgetter("depends_on")
_START, _END, _BUSY = attrgetter("start_h"), attrgetter("end_h"), attrgetter("busy_s")
_ROW_ID = itemgetter("id")


def executor_alive(ws: Workspace) -> bool:
    """Whether an executor holds the working directory's lock (probed, never taken)."""
    return lock_held(ws.lock)


def current(plan: Plan, hist: History) -> dict[str, RunRecord]:
    """Each plan run's record under its current parameters, to read: the runs without
    one share a single pending record (a plan of 100,000 runs makes none of its own)."""
    pending = RunRecord("")
    out = dict.fromkeys(map(_ID, plan.runs), pending)
    records = hist.runs
    if records:
        for run in plan.runs:
            rec = records.get(run.id)
            if rec and rec.fingerprint == run_fingerprint(run):
                out[run.id] = rec
    return out


def group(run: Run, rec: RunRecord, recs: dict[str, RunRecord]) -> str:
    """done, running, pending, failed, or blocked (the run it evaluates failed)."""
    if rec.state == "finished":
        return "done"
    if rec.state == "failed":
        return "failed"
    if rec.state == "running" and alive(rec.process):
        return "running"
    parent = recs.get(run.depends_on)
    if parent is not None and parent.state == "failed":
        return "blocked"
    return "pending"


def groups_of(runs: list[Run], recs: dict[str, RunRecord]) -> dict[str, str]:
    """Each run's `group`. A pending run that waits on nothing (most of a large plan before
    it starts) is told so without the call."""
    out = dict.fromkeys(map(_ID, runs), "pending")
    recorded = {rid for rid, rec in recs.items() if rec.state != "pending"}
    for r in runs if recorded else filter(_DEPENDS, runs):
        if r.depends_on or r.id in recorded:
            out[r.id] = group(r, recs[r.id], recs)
    return out


@dataclass
class Projection:
    """Placement of the work left, from now, with durations scaled by the pace so far."""

    pace: float
    end_h: float
    """Hour the last run ends if every run left is run."""
    fits: dict[str, tuple[float, float, tuple[int, ...]] | None]
    """Run id → (start h, end h, card slots) inside the usable window, or None."""


def project(plan: Plan, recs: dict[str, RunRecord], groups: dict[str, str], now_h: float,
            n_cards: int, pace: float | None = None, origin: float | None = None,
            left_h: dict[str, float] | None = None) -> Projection:
    """Where the runs not done yet would go from `now_h` on; `left_h` gives the hours each
    still needs (at the observed step times) instead of the planned hours × the pace."""
    runs = plan.runs
    states = list(map(groups.__getitem__, map(_ID, runs)))
    kinds = set(states)
    if pace is None:
        done = [r for r, g in zip(runs, states, strict=True)
                if g == "done" and recs[r.id].busy_s > 0] if "done" in kinds else []
        planned = sum(r.end_h - r.start_h for r in done) * 3600
        pace = sum(recs[r.id].busy_s for r in done) / planned if planned > 0 else 1.0
    now = time.time()
    # Before a run starts (most of a large plan) every run is left, none running.
    running = [r for r, g in zip(runs, states, strict=True) if g == "running"] \
        if "running" in kinds else []
    pending = list(runs) if kinds == {"pending"} else \
        [r for r, g in zip(runs, states, strict=True) if g == "pending"]
    left = running + pending
    given = left_h or {}

    def planned_left(r: Run, running_now: bool) -> float:
        rec = recs[r.id]
        spent = rec.busy_s + (now - rec.started if running_now and rec.started else 0.0)
        return max((r.end_h - r.start_h) * pace - spent / 3600, 0.0)

    durations = [given[r.id] if r.id in given else planned_left(r, True) for r in running]
    ids = list(map(_ID, pending))
    if given and all(map(given.__contains__, ids)):
        durations += map(given.__getitem__, ids)
    elif given:
        durations += [given[r.id] if r.id in given else planned_left(r, False)
                      for r in pending]
    else:  # the planned hours × the pace, less any time spent (a run retried)
        hours = list(map(sub, map(_END, pending), map(_START, pending)))
        if pace != 1.0:
            hours = [h * pace for h in hours]
        spent = list(map(_BUSY, map(recs.__getitem__, ids)))
        durations += [max(h - b / 3600, 0.0) for h, b in zip(hours, spent, strict=True)] \
            if any(spent) or min(hours, default=0.0) < 0 else hours
    need = list(map(len, map(_CARD, left)))
    # Most plans have no evaluations: then no run waits on another.
    after: list[int] | None = None
    if any(map(_DEPENDS, left)):
        index = {r.id: i for i, r in enumerate(left)}
        after = [index.get(r.depends_on, -1) for r in left]
    horizon = plan.campaign.usable_until_h - now_h
    placed = schedule(durations, need, n_cards, horizon, after)
    # Without a horizon the same runs go to the same places, unless some were left out.
    unbounded = placed if None not in placed else schedule(durations, need, n_cards,
                                                           float("inf"), after)
    ends = [p.end for p in unbounded if p is not None]
    if ends:
        ends = [max(ends) + now_h]
    else:  # nothing left: the campaign ended when its last run did
        ends = [(rec.ended - origin) / 3600 for rec in recs.values()
                if rec.ended is not None and origin is not None and rec.state == "finished"]
    fits = dict(zip([*map(_ID, running), *ids],
                    [None if p is None else (now_h + p.start, now_h + p.end, p.cards)
                     for p in placed], strict=True))
    return Projection(pace, max(ends, default=now_h), fits)


@functools.lru_cache(maxsize=4096)
def _seconds(hours: float) -> float:
    """A planned duration in seconds, as a row gives it (a matrix's runs share a few)."""
    return round(hours * 3600, 1)


def _h(t: float | None, origin: float | None) -> float | None:
    return None if t is None or origin is None else round((t - origin) / 3600, 3)


def summarize(plan: Plan, hist: History, ws: Workspace, now: float | None = None
              ) -> dict[str, Any]:
    """The status as plain data (what `status --json` prints)."""
    s = _summary(plan, hist, ws, now)
    s["runs"] = [r if type(r) is dict else expand(r) for r in s["runs"]]
    return s


def text(plan: Plan, hist: History, ws: Workspace, now: float | None = None) -> str:
    """The status for a person: `render(summarize(...))`, without a table of its own made
    for each row of a run that has not started (a large plan's hundred thousand)."""
    return render(_summary(plan, hist, ws, now))


def _summary(plan: Plan, hist: History, ws: Workspace, now: float | None = None
             ) -> dict[str, Any]:
    """`summarize`, but a row of a run that has not started may come as `Fresh`."""
    now = time.time() if now is None else now
    # One look at the runs' folders, for their traces and their done records alike.
    present = folders_present(ws.workdir, [*plan.runs, *plan.held])
    hist = with_traces(plan, hist, ws.workdir, present=present)
    recs = with_done_records(plan.runs, current(plan, hist), ws.workdir, present)
    groups = groups_of(plan.runs, recs)
    origin = hist.window_start
    now_h = (now - origin) / 3600 if origin is not None else plan.campaign.usable_from_h
    n_cards = len(hist.cards) or plan.campaign.cards
    observed = rates(plan, recs)
    left = hours_left(plan, recs, groups, now, observed, ws.workdir)
    proj = project(plan, recs, groups, now_h, n_cards, None if origin is not None else 1.0,
                   origin, left if origin is not None else None)
    c = plan.campaign
    startup = startup_s(plan)
    fits = proj.fits
    # What a run's row says of its record alone, worked out once a record: the runs of a
    # large plan that have not started share one record, and their rows one template.
    of_record: dict[tuple[int, str], dict[str, Any]] = {}
    unstarted: dict[tuple[int, str, str, int], dict[str, Any]] = {}
    runs: list[dict[str, Any] | Fresh] = []
    ids = list(map(_ID, plan.runs))
    # Each run's record, state and place looked up in C, a pass each, not in the loop.
    for r, rid, rec, state, placed in zip(plan.runs, ids, map(recs.__getitem__, ids),
                                          map(groups.__getitem__, ids), map(fits.get, ids),
                                          strict=True):
        fresh = not (rec.trace or rec.attempts or state != "pending")
        if fresh:
            template = unstarted.get((id(rec), r.kind, r.variant, r.steps))
            if template is not None:  # only what is the run's own, beside its template
                start, end = r.start_h, r.end_h
                runs.append((template, rid, start, end, _seconds(end - start),
                             round(placed[1], 6) if placed else None,
                             placed is not None or rid not in fits))
                continue
        mine = of_record.get((id(rec), state))
        if mine is None:
            busy = rec.busy_s + (now - rec.started if state == "running" and rec.started
                                 else 0.0)
            mine = of_record[(id(rec), state)] = {
                "state": state, "detail": rec.state, "attempts": rec.attempts,
                "failures": rec.failures, "exit_code": rec.exit_code,
                "actual_start_h": _h(rec.first_start, origin),
                "actual_end_h": _h(rec.ended, origin) if state == "done" else None,
                "actual_s": round(busy, 1), "checkpoints": rec.checkpoints}
        rate = observed.get(r.variant)
        if not fresh:
            progress = run_fields(r, rec, state, now, rate, startup, ws.workdir)
        else:  # nothing run yet: the same fields for every run of a configuration
            progress = {
                "planned_s_per_step": rate.planned_seconds_per_step if rate else None,
                "observed_s_per_step": None, "step": 0, "steps": r.steps,
                "progress": None, "resumes_from_step": None}
        row = {
            "id": rid, "kind": r.kind, "state": state, "detail": mine["detail"],
            "attempts": mine["attempts"], "failures": mine["failures"],
            "exit_code": mine["exit_code"],
            "planned_start_h": r.start_h, "planned_end_h": r.end_h,
            "planned_s": _seconds(r.end_h - r.start_h),
            "actual_start_h": mine["actual_start_h"], "actual_end_h": mine["actual_end_h"],
            "actual_s": mine["actual_s"], "checkpoints": mine["checkpoints"],
            "projected_end_h": round(placed[1], 6) if placed else None,
            # Runs done, failed or blocked are not projected: only those left can miss.
            "fits": placed is not None or rid not in fits, **progress,
        }
        if fresh and placed:  # a template for the runs that fit, as this one does
            unstarted[(id(rec), r.kind, r.variant, r.steps)] = row
        runs.append(row)
    counted = Counter(groups.values())
    late = [rid for rid, fits_now in map(fits_of, runs) if not fits_now]
    return {
        # The plan the journal ran, once a session has started; before that, no key.
        **({"plan": str(hist.plan["path"])} if hist.plan and hist.plan["path"] else {}),
        "campaign": c.id, "workdir": str(ws.workdir), "journal": str(ws.journal),
        "executor_running": executor_alive(ws), "started": origin is not None,
        "window_start": origin, "now_h": round(now_h, 3), "window_h": c.window_hours,
        "usable_until_h": c.usable_until_h, "planned_end_h": plan.summary.makespan_h,
        "projected_end_h": round(proj.end_h, 6), "pace": round(proj.pace, 3),
        "behind_s": round((proj.end_h - plan.summary.makespan_h) * 3600, 1),
        "counts": {g: counted[g] for g in GROUPS},
        "no_longer_fit": late, "cards": n_cards, "runs": runs,
        "observed": {k: v.as_json() for k, v in observed.items()},
        "at_risk": list(late),
        "capacity_left": capacity_left(plan, left, n_cards, round(now_h, 3), observed),
    }

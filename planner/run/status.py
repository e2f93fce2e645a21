"""Where a running plan stands: each run's state, actual against planned times, and the
projected end against the window's end. Reads only; writes nothing."""

from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass
from itertools import repeat
from operator import add, attrgetter, itemgetter, sub
from pathlib import Path
from typing import Any, cast

from planner.packing.schedule import Placement, schedule
from planner.planfile.plan import Plan, Run
from planner.run.clock import capacity_left, hours_left, run_fields
from planner.run.journal import History, RunRecord, Workspace
from planner.run.live import live
from planner.run.observe import Rate, startup_s
from planner.run.once import lock_held
from planner.run.procs import alive
from planner.run.status_render import render

GROUPS = ("done", "running", "pending", "failed", "blocked")
_ID = attrgetter("id")
_CARD = attrgetter("card")
_DEPENDS = attrgetter("depends_on")
_START, _END, _BUSY = attrgetter("start_h"), attrgetter("end_h"), attrgetter("busy_s")
_KIND, _VARIANT, _STEPS = attrgetter("kind"), attrgetter("variant"), attrgetter("steps")
# A place's start, end and cards: a Placement's, or the tuple `Projection.fits` holds.
_P_START, _P_END, _P_CARDS = itemgetter(0), itemgetter(1), itemgetter(2)


def executor_alive(ws: Workspace) -> bool:
    """Whether an executor holds the working directory's lock (probed, never taken)."""
    return lock_held(ws.lock)


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
    ends = [p.end for p in unbounded if p is not None] if None in unbounded else \
        list(map(_P_END, cast(list[Placement], unbounded)))
    if ends:
        ends = [max(ends) + now_h]
    else:  # nothing left: the campaign ended when its last run did
        ends = [(rec.ended - origin) / 3600 for rec in recs.values()
                if rec.ended is not None and origin is not None and rec.state == "finished"]
    at: list[tuple[float, float, tuple[int, ...]] | None]
    if None not in placed:  # each place from now on, made in C passes
        every = cast(list[Placement], placed)
        at = list(zip(map(add, repeat(now_h), map(_P_START, every)),
                      map(add, repeat(now_h), map(_P_END, every)), map(_P_CARDS, every),
                      strict=True))
    else:
        at = [None if p is None else (now_h + p.start, now_h + p.end, p.cards)
              for p in placed]
    fits = dict(zip([*map(_ID, running), *ids], at, strict=True))
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
    now = time.time() if now is None else now
    figures = live(plan, hist, ws, now)  # the same figures as replan and the Progress screen
    hist, recs, observed = figures.hist, figures.recs, figures.observed
    groups = groups_of(plan.runs, recs)
    origin = hist.window_start
    now_h = (now - origin) / 3600 if origin is not None else plan.campaign.usable_from_h
    n_cards = len(hist.cards) or plan.campaign.cards
    left = hours_left(plan, recs, groups, now, observed, ws.workdir)
    proj = project(plan, recs, groups, now_h, n_cards, None if origin is not None else 1.0,
                   origin, left if origin is not None else None)
    c = plan.campaign
    startup = startup_s(plan)
    runs, late = _rows(plan.runs, recs, groups, proj.fits, observed, now, origin, startup,
                       ws.workdir)
    counted = Counter(groups.values())
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


def text(plan: Plan, hist: History, ws: Workspace, now: float | None = None) -> str:
    """The status for a person: `render(summarize(...))`."""
    return render(summarize(plan, hist, ws, now))


def _rows(runs: list[Run], recs: dict[str, RunRecord], groups: dict[str, str],
          fits: dict[str, tuple[float, float, tuple[int, ...]] | None],
          observed: dict[str, Rate], now: float, origin: float | None, startup: float,
          workdir: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Each run's row, and the runs left that no longer fit."""
    rows: list[dict[str, Any]] = []
    late: list[str] = []
    for r in runs:
        rec, state = recs[r.id], groups[r.id]
        busy = rec.busy_s + (now - rec.started if state == "running" and rec.started else 0.0)
        place = fits.get(r.id)
        # Runs done, failed or blocked are not projected: only those left can miss.
        fits_yet = place is not None or r.id not in fits
        if not fits_yet:
            late.append(r.id)
        rate = observed.get(r.variant)
        if state == "pending" and not (rec.trace or rec.attempts):
            # Nothing run yet: no trace to read progress from.
            progress = {
                "planned_s_per_step": rate.planned_seconds_per_step if rate else None,
                "observed_s_per_step": None, "step": 0, "steps": r.steps,
                "progress": None, "resumes_from_step": None, "resumes_recorded": None}
        else:
            progress = run_fields(r, rec, state, now, rate, startup, workdir)
        rows.append({
            "id": r.id, "kind": r.kind, "state": state, "detail": rec.state,
            "attempts": rec.attempts, "failures": rec.failures, "exit_code": rec.exit_code,
            "reason": rec.reason or None, "planned_start_h": r.start_h,
            "planned_end_h": r.end_h, "planned_s": _seconds(r.end_h - r.start_h),
            "actual_start_h": _h(rec.first_start, origin),
            "actual_end_h": _h(rec.ended, origin) if state == "done" else None,
            "actual_s": round(busy, 1), "checkpoints": rec.checkpoints,
            "projected_end_h": None if place is None else round(place[1], 6),
            "fits": fits_yet, **progress,
        })
    return rows, late

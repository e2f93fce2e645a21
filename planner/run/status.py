"""Where a running plan stands: each run's state, actual against planned times, and the
projected end against the window's end. Reads only; writes nothing."""

from __future__ import annotations

import functools
import time
from collections import Counter
from dataclasses import dataclass
from datetime import timedelta
from operator import attrgetter, itemgetter, sub
from typing import Any

import humanize

from planner.planning.plan import Plan, Run
from planner.planning.schedule import schedule
from planner.run.clock import capacity_left, hours_left, rates, run_fields
from planner.run.journal import History, RunRecord, Workspace
from planner.run.observe import startup_s, with_done_records
from planner.run.once import folders_present, lock_held
from planner.run.params import run_fingerprint
from planner.run.procs import alive
from planner.run.slurm_trace import with_traces

GROUPS = ("done", "running", "pending", "failed", "blocked")
_ID = attrgetter("id")
_CARD = attrgetter("card")
_DEPENDS = attrgetter("depends_on")
_START, _END, _BUSY = attrgetter("start_h"), attrgetter("end_h"), attrgetter("busy_s")
_ROW_ID = itemgetter("id")


@functools.lru_cache(maxsize=4096)
def span(seconds: float) -> str:
    """A duration in words, through humanize (the runs of a matrix share a few durations:
    each is worded once)."""
    s = abs(seconds)
    unit = "seconds" if s < 600 else "minutes" if s < 86400 else "hours"
    return humanize.precisedelta(timedelta(seconds=s), minimum_unit=unit,
                                 format="%0.1f" if s < 10 else "%0.0f")


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
    runs = []
    ids = list(map(_ID, plan.runs))
    # Each run's record, state and place looked up in C, a pass each, not in the loop.
    for r, rid, rec, state, placed in zip(plan.runs, ids, map(recs.__getitem__, ids),
                                          map(groups.__getitem__, ids), map(fits.get, ids),
                                          strict=True):
        fresh = not (rec.trace or rec.attempts or state != "pending")
        if fresh:
            template = unstarted.get((id(rec), r.kind, r.variant, r.steps))
            if template is not None:  # only what is the run's own is written over it
                row = template.copy()
                start, end = row["planned_start_h"], row["planned_end_h"] = \
                    r.start_h, r.end_h
                row["id"] = rid
                row["planned_s"] = _seconds(end - start)
                if placed:
                    row["projected_end_h"] = round(placed[1], 6)
                else:
                    row["projected_end_h"] = None
                    row["fits"] = rid not in fits
                runs.append(row)
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
    late = [r["id"] for r in runs if not r["fits"]]
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


def observed_lines(s: dict[str, Any]) -> list[str]:
    """Observed step times per variant and the room left, once anything was observed."""
    seen = {k: v for k, v in s.get("observed", {}).items() if v["source"] != "planned"}
    if not s["started"] or not seen:
        return []
    rates = " · ".join(f"{k} {v['seconds_per_step']:.3g} s/step ({v['ratio']:.2f}×"
                       f"{'' if v['source'] == 'observed' else ', campaign ratio'})"
                       for k, v in seen.items())
    room = s["capacity_left"]
    more = room["seed_sets_more_at_most"]
    return [f"Observed  {rates}",
            f"Room left {room['card_hours']:.4g} card-hours after the work left"
            + (f" (at most {more} more seed set{'s' if more != 1 else ''})"
               if more is not None else "")]


def pace_cell(r: dict[str, Any]) -> str:
    """`  step 40/100 (reported) · 0.62 s/step, planned 0.30` for a run with figures."""
    parts = []
    if r.get("state") == "running" and r.get("progress"):
        parts.append(f"step {r['step']}/{r['steps']} ({r['progress']})")
    if r.get("resumes_from_step"):
        parts.append(f"resumes from step {r['resumes_from_step']}/{r['steps']} at least")
    if r.get("observed_s_per_step") is not None and r.get("planned_s_per_step"):
        parts.append(f"{r['observed_s_per_step']:.3g} s/step, planned "
                     f"{r['planned_s_per_step']:.3g}")
    return ("  " + " · ".join(parts)) if parts else ""


def _hh(h: float | None) -> str:
    return "—" if h is None else f"{h:.1f}"


def _actual(start: float | None, end: float | None) -> str:
    """`  3.0–12.5`, `  3.0–` while it runs, `—` before it starts."""
    if start is None:
        return f"{'—':>6}"
    return f"{_hh(start):>6}–{'' if end is None else _hh(end)}"


@functools.lru_cache(maxsize=4096)
def _cells(start: float, end: float, actual_start: float | None, actual_end: float | None,
           planned_s: float) -> str:
    """The planned and actual hours and the planned duration of a row (the runs of a matrix
    share a few of each: each is written once)."""
    return (f"{_hh(start):>6}–{_hh(end):<6}  {_actual(actual_start, actual_end):<13}  "
            f"{span(planned_s):<25}  ")


def render(s: dict[str, Any]) -> str:
    """The status for a person."""
    counts = " · ".join(f"{n} {g}" for g, n in s["counts"].items())
    lines = [f"{s['campaign']} · working directory {s['workdir']}",
             f"Runs      {counts} (of {len(s['runs'])})",
             f"Executor  {'running' if s['executor_running'] else 'not running'}; "
             f"journal {s['journal']}"]
    if not s["started"]:
        lines.append("Window    not started: no run session yet (`campaign-planner run`)")
    else:
        left = (s["usable_until_h"] - s["now_h"]) * 3600
        lines.append(f"Window    now hour {s['now_h']:.1f} of {s['window_h']:g}; runs must end "
                     f"by hour {s['usable_until_h']:g} "
                     f"({'in ' + span(left) if left > 0 else 'passed'})")
        lines.append(f"Pace      finished runs took {s['pace']:.2f}× their planned time"
                     if s["counts"]["done"] else
                     "Pace      no run has finished yet: planned times assumed")
    behind = s["behind_s"]
    how = "on plan" if abs(behind) < 60 else \
        f"{span(behind)} {'behind' if behind > 0 else 'ahead of'} the plan"
    lines.append(f"Projected last run ends at hour {s['projected_end_h']:.1f}: {how} "
                 f"(planned {s['planned_end_h']:.1f})")
    lines += observed_lines(s)
    late = s["no_longer_fit"]
    if late:
        lines.append(f"Late      {len(late)} run(s) will no longer end by hour "
                     f"{s['usable_until_h']:g}: " + ", ".join(late[:6])
                     + (f" and {len(late) - 6} more" if len(late) > 6 else ""))
    width = max(map(len, map(_ROW_ID, s["runs"])))
    lines += ["", f"  {'run':<{width}}  {'state':<11} {'tries':>5}  {'planned h':<13}  "
              f"{'actual h':<13}  {'planned':<25}  actual"]
    for r in s["runs"]:
        state = r["state"]
        if state == "pending" and r["detail"] in ("retrying", "interrupted", "running"):
            state = "retrying" if r["detail"] == "retrying" else "to resume"
        code = f" exit {r['exit_code']}" if r["state"] == "failed" else ""
        figures = r.get("progress") or r.get("resumes_from_step") \
            or r.get("observed_s_per_step") is not None
        cells = _cells(r["planned_start_h"], r["planned_end_h"], r["actual_start_h"],
                       r["actual_end_h"], r["planned_s"])
        lines.append(
            f"  {r['id']:<{width}}  {state:<11} {r['attempts']:>5}  {cells}"
            f"{span(r['actual_s']) if r['actual_s'] else '—'}{code}"
            f"{pace_cell(r) if figures else ''}")
    return "\n".join(lines)

"""`status` against the clock: observed step times per run and variant, the work left
re-timed by them, and the capacity the rest of the window still has."""

from __future__ import annotations

import math
from operator import attrgetter, sub
from pathlib import Path
from typing import Any

from planner.planfile.plan import Plan, Run
from planner.run.journal import RunRecord
from planner.run.observe import (
    Rate,
    current_step,
    distinct,
    observed_span,
    rates,
    remaining_h,
    resumed_h,
    retimed_h,
    startup_s,
)
from planner.run.resume import resume_from

_SEED = attrgetter("seed")
_ID, _VARIANT, _CARD = attrgetter("id"), attrgetter("variant"), attrgetter("card")
_START, _END = attrgetter("start_h"), attrgetter("end_h")


def hours_left(plan: Plan, recs: dict[str, RunRecord], groups: dict[str, str], now: float,
               observed: dict[str, Rate], workdir: Path | None = None) -> dict[str, float]:
    """Hours each run not done yet still needs at the observed step times; an interrupted
    run only its steps after the checkpoint it resumes from."""
    startup = startup_s(plan)
    out = {}
    get = observed.get
    # Variants at their planned step time (all of them before anything ran): a run of one
    # that never started needs its planned hours, as `retimed_h` gives them.
    as_planned = {v for v, r in observed.items()
                  if r.seconds_per_step == r.planned_seconds_per_step}
    runs = plan.runs
    ids = list(map(_ID, runs))
    if set(groups.values()) == {"pending"} and set(map(_VARIANT, runs)) <= as_planned \
            and not any(rec.attempts for rec in distinct(recs)):
        # Nothing started yet, every variant at its planned step time (a large plan before
        # its window): each run's planned hours, a C pass.
        return dict(zip(ids, map(sub, map(_END, runs), map(_START, runs)), strict=True))
    for run in runs:
        rid = run.id
        group = groups[rid]
        if group == "pending":
            rec = recs[rid]
            # A run never started resumes from nothing: its re-timed hours.
            if rec.attempts:
                out[rid] = resumed_h(run, get(run.variant),
                                     resume_from(run, rec, workdir).step)
            elif run.variant in as_planned:
                out[rid] = run.end_h - run.start_h
            else:
                out[rid] = retimed_h(run, get(run.variant))
        elif group == "running":
            out[rid] = remaining_h(run, recs[rid], now, get(run.variant), startup)
    return out


def run_fields(run: Run, rec: RunRecord, group: str, now: float, rate: Rate | None,
               startup: float, workdir: Path | None = None) -> dict[str, Any]:
    """Per run: its planned and observed seconds per step and how far it is."""
    t, steps = observed_span(run, rec, startup) if run.kind == "train" else (0.0, 0)
    step, how = (current_step(run, rec, now, rate, startup) if group == "running"
                 else (run.steps if group == "done" else 0, "exit" if group == "done" else ""))
    resume = resume_from(run, rec, workdir) if group == "pending" else None
    return {
        "planned_s_per_step": rate.planned_seconds_per_step if rate else None,
        "observed_s_per_step": round(t / steps, 6) if steps else None,
        "step": step, "steps": run.steps, "progress": how or None,
        "resumes_from_step": resume.step or None if resume else None,
        "resumes_recorded": resume.recorded if resume and resume.step else None,
    }


def capacity_left(plan: Plan, left: dict[str, float], n_cards: int, now_h: float,
                  observed: dict[str, Rate]) -> dict[str, Any]:
    """Card-hours the rest of the window holds beyond the work left, and how many more
    seed sets that is by card-hours alone (an upper bound) at the observed step times."""
    room = n_cards * max(plan.campaign.usable_until_h - now_h, 0.0)
    runs = plan.runs
    # Each run on one card (most plans): the hours left are the card-hours, summed in the
    # same order.
    need = sum(left.values()) if set(map(len, map(_CARD, runs))) <= {1} \
        and left.keys() <= set(map(_ID, runs)) else \
        sum(left[r.id] * len(r.card) for r in runs if r.id in left)
    free = max(room - need, 0.0)
    seeds = [s for s in map(_SEED, runs) if s is not None]
    first = min(seeds, default=None)
    one_set = 0 if first is None else sum(
        retimed_h(r, observed.get(r.variant)) * len(r.card) for r in runs if r.seed == first)
    more = math.floor(free / one_set + 1e-9) if one_set > 0 else None
    return {"card_hours": round(free, 4), "seed_sets_more_at_most": more}


__all__ = ["capacity_left", "hours_left", "rates", "run_fields"]

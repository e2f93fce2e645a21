"""The exact packer: the objective of `planner.packing.pack` on OR-Tools CP-SAT.

Imported only when `--solver cp-sat` is used (the `solve` extra); a plain plan never loads
OR-Tools. Every solve of one call shares one wall-clock deadline, model building included.

Complete seed sets come first, one yes/no question each (`planner.packing.sets`:
do the runs of one more set, with those before, fit whole?), and the rest of the window is
filled around them. Then the counts (complete seed sets, matrix runs, evaluations, as one
weighted sum of small integers) are searched on a grid whose durations are rounded up,
from the best packing so far, so every schedule found holds in hours; their bound comes
from a grid whose durations are rounded down (the same grid when the problem is exact in
whole units, `planner.packing.model`), so it holds for the real durations.
`optimal` is claimed only when the best real packing reaches that bound. Then the end of
the first complete seed set, then the last end. The solver's schedule is finally replayed
in its start order through the fast packer's placement, which moves no run later (an
active schedule; seed by seed instead where that scores as well), and the best packing by
the real durations is kept.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from planner.packing.fast import serial
from planner.packing.model import Clock, Model, grid, workers
from planner.packing.objective import Job, Packing, runnable, score, trivially_optimal
from planner.packing.schedule import Placement
from planner.packing.sets import MIN_SOLVE_S, more_sets, top_up, with_cards


def _replay(jobs: Sequence[Job], got: Sequence[Placement | None], n_cards: int,
            horizon: float) -> list[Placement | None] | None:
    """The solver's packing placed in its start order: every run at or before its solver
    start, on actual cards. None if the replay loses a run (it should not).

    The same runs are also tried seed layer by seed layer: where that scores as well,
    earlier seeds run first on their cards, so a window cut short still holds complete
    sets."""
    placed = [i for i, p in enumerate(got) if p is not None]
    start = {i: got[i].start for i in placed}  # type: ignore[union-attr]
    by_start = sorted(placed, key=lambda i: (start[i], i))
    by_seed = sorted(placed, key=lambda i: (jobs[i].after >= 0, jobs[i].seed, start[i], i))
    best = with_cards(jobs, got, n_cards, horizon)
    for order in (by_seed, by_start):
        out = serial(jobs, order, n_cards, horizon)
        if any((p is None) != (q is None) for p, q in zip(got, out, strict=True)):
            continue
        if best is None or score(jobs, out) > score(jobs, best):
            best = out
    return best


def pack_cp_sat(jobs: Sequence[Job], n_cards: int, horizon: float,
                fast: list[Placement | None], bound: int, clock: Clock | float,
                exact_times: bool = False) -> Packing:
    """Solve the objective exactly within `clock`'s time and deterministic work (or by a
    `time.monotonic()` deadline), starting from the fast packing `fast`; `bound`: a true
    bound on matrix runs already known. `exact_times`: optimize criteria 4-5 too when every
    run that can run is placed."""
    if not isinstance(clock, Clock):
        clock = Clock(clock)
    ok = runnable(jobs, n_cards, horizon)
    best, best_key = fast, score(jobs, fast)

    def keep(got: list[Placement | None] | None) -> None:
        nonlocal best, best_key
        if got is not None:
            got = top_up(jobs, got, n_cards, horizon)
        if got is not None and score(jobs, got) > best_key:
            best, best_key = got, score(jobs, got)

    keep(more_sets(jobs, n_cards, horizon, best, clock.part(0.5)))
    whole = trivially_optimal(jobs, best, n_cards, horizon)
    if (whole and not exact_times) or clock.left() < MIN_SOLVE_S:
        return Packing(best, whole, best_key[1] if whole else bound,
                       "cp-sat")
    g = grid(jobs, horizon, ok)
    model = Model(jobs, n_cards, ok, g.up, g.h, g.scale)
    cp = model.cp
    model.hint(best, n_cards)
    model.m.maximize(model.counts)
    # Every run that can run is placed: the counts need no search, only the times.
    value = counts_bound = model.value(best_key[:3]) if whole else None
    if not whole:
        solver, status = model.solve(clock, 0.4 if g.exact else 0.3)
        if status in (cp.OPTIMAL, cp.FEASIBLE):
            value = round(solver.objective_value)
            keep(_replay(jobs, model.placed(solver), n_cards, horizon))
            if g.exact:
                counts_bound = math.floor(solver.best_objective_bound + 1e-6)
    relax = model if g.exact else None
    if relax is None and not whole and clock.left() >= MIN_SOLVE_S:
        relax = Model(jobs, n_cards, ok, g.down, g.h, g.scale)
        relax.hint(best, n_cards)
        relax.m.maximize(relax.counts)
        r_solver, r_status = relax.solve(clock, 0.4, workers())
        if r_status in (cp.OPTIMAL, cp.FEASIBLE):
            counts_bound = math.floor(r_solver.best_objective_bound + 1e-6)
    optimal = counts_bound is not None and model.value(best_key[:3]) >= counts_bound
    matrix_bound = bound
    if optimal and best_key[1] == sum(ok[i] for i, j in enumerate(jobs) if j.matrix):
        matrix_bound = best_key[1]
    elif best_key[1] < bound and relax is not None and clock.left() >= MIN_SOLVE_S:
        # The counts' optimum may trade matrix runs for complete sets: bound the matrix
        # runs alone, on the grid whose bound holds for the real durations.
        relax.m.maximize(sum(relax.matrix))
        relax.hint(best, n_cards)
        m_solver, m_status = relax.solve(clock, 0.3, workers())
        if m_status in (cp.OPTIMAL, cp.FEASIBLE):
            matrix_bound = min(bound, math.floor(m_solver.best_objective_bound + 1e-6))
    if value is not None and value >= model.value(best_key[:3]):
        _times(model, jobs, n_cards, horizon, best, keep, clock)
    return Packing(best, optimal, max(matrix_bound, best_key[1]), "cp-sat")


def _times(model: Model, jobs: Sequence[Job], n_cards: int, horizon: float,
           best: list[Placement | None], keep: Any, clock: Clock) -> None:
    """Criteria 4 and 5 on the search grid, the counts held at the best packing's."""
    m, cp = model.m, model.cp
    m.add(model.counts >= model.value(score(jobs, best)[:3]))
    for stage in ("first", "last"):
        if clock.left() < MIN_SOLVE_S:
            return
        if stage == "first":
            if not score(jobs, best)[0]:
                continue
            goal = m.new_int_var(0, model.h, "first")
            m.add_max_equality(goal, [model.end[i] for i in model.layer0])
            for on_c in model.assign:
                m.add(sum(on_c[i][1] * on_c[i][0] for i in model.layer0) <= goal)
        else:
            goal = m.new_int_var(0, model.h, "last")
            m.add_max_equality(goal, model.end)
            for load in model.loads:
                m.add(load <= goal)
        m.minimize(goal)
        model.hint(best, n_cards)
        solver, status = model.solve(clock, 0.5 if stage == "first" else 1.0)
        if status not in (cp.OPTIMAL, cp.FEASIBLE):
            return
        got = _replay(jobs, model.placed(solver), n_cards, horizon)
        keep(got)
        if got is not None and score(jobs, got) >= score(jobs, best):
            best = got
        m.add(goal <= solver.value(goal))

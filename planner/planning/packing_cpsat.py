"""The exact packer: the objective of `planner.planning.packing` on OR-Tools CP-SAT.

Imported only when `--solver cp-sat` is used (the `solve` extra); a plain plan never loads
OR-Tools. Times become whole units (minutes or seconds when every figure is a whole number
of them, else milliseconds with durations rounded up and the window's close rounded down
after adding the tolerance), so a schedule the solver accepts also holds in hours. In
milliseconds the rounding is at most 1 ms a run against a 3.6 ms tolerance: a packing whose
card holds more than three runs ending within milliseconds of the close may be missed, and
the proof is then of that slightly stricter problem.

The criteria are solved in stages, each fixing the optimum of the one before: the counts
(complete seed sets, matrix runs, evaluations, as one weighted sum of small integers), then
the end of the first complete seed set, then the last end. A single worker under a
deterministic time limit keeps the same preset giving the same plan. The solver's schedule
is finally replayed in its start order through the fast packer's placement, which moves no
run later (an active schedule; seed by seed instead where that scores as well), and the
fast packer's own schedule is kept whenever the solver finds nothing better.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from typing import Any

from planner.planning.objective import EPS_H, Job, Packing, runnable, score
from planner.planning.packing_fast import serial
from planner.planning.schedule import Placement

SCALES = (60, 3600, 3_600_000)
"""Solver time units per hour tried, coarsest first: minutes, seconds, milliseconds. Coarse
units make the search far quicker; the first in which every duration and the window are
whole numbers is used, else milliseconds with durations rounded up."""


def scale_for(jobs: Sequence[Job], horizon: float, ok: Sequence[bool]) -> int:
    """The coarsest unit (per hour) in which the problem is exact."""
    values = [horizon, *(j.duration for j, r in zip(jobs, ok, strict=True) if r)]
    for scale in SCALES[:-1]:
        if all(abs(v * scale - round(v * scale)) < 1e-6 for v in values):
            return scale
    return SCALES[-1]


class _Model:
    """The CP-SAT model of one packing problem."""

    def __init__(self, jobs: Sequence[Job], n_cards: int, horizon: float,
                 ok: Sequence[bool]) -> None:
        from ortools.sat.python import cp_model

        self.cp = cp_model
        self.m = m = cp_model.CpModel()
        self.jobs = jobs
        self.scale = scale = scale_for(jobs, horizon, ok)
        h = math.floor((horizon + EPS_H) * scale + 1e-6)
        self.dur = [math.ceil(j.duration * scale - 1e-6) if r else 0
                    for j, r in zip(jobs, ok, strict=True)]
        self.on: list[Any] = []
        self.start: list[Any] = []
        self.end: list[Any] = []
        intervals, demands = [], []
        self._x: dict[int, list[Any]] = {}
        self.assign: list[list[tuple[Any, int]]] = []
        for i, (j, r) in enumerate(zip(jobs, ok, strict=True)):
            on = m.new_bool_var(f"on{i}")
            if not r:
                m.add(on == 0)
            s = m.new_int_var(0, max(h - self.dur[i], 0), f"s{i}")
            e = m.new_int_var(0, h, f"e{i}")
            intervals.append(m.new_optional_interval_var(s, self.dur[i], e, on, f"x{i}"))
            demands.append(j.cards)
            self.on.append(on)
            self.start.append(s)
            self.end.append(e)
            if j.after >= 0:
                m.add_implication(on, self.on[j.after])
                m.add(s >= self.end[j.after]).only_enforce_if(on)
        # Cards are identical and a run holds its cards throughout, so a profile that never
        # exceeds the card count can always be given card indices (assigned by start time).
        m.add_cumulative(intervals, demands, n_cards)
        # Redundant, for stronger bounds: each run's time lands on `cards` cards, and no
        # card is busy longer than the window (a bin-packing relaxation the cumulative
        # constraint alone propagates weakly). Cards are identical: loads in falling order.
        loads = []
        for c in range(n_cards):
            on_c: list[tuple[Any, int]] = []
            for i, j in enumerate(jobs):
                if ok[i] and j.cards < n_cards:
                    x = m.new_bool_var(f"on{i}c{c}")
                    self._x.setdefault(i, []).append(x)
                    on_c.append((x, self.dur[i]))
                elif ok[i]:
                    on_c.append((self.on[i], self.dur[i]))
                else:
                    on_c.append((0, 0))
            load = sum(d * x for x, d in on_c)
            m.add(load <= h)
            loads.append(load)
            self.assign.append(on_c)
        for i, xs in self._x.items():
            m.add(sum(xs) == jobs[i].cards * self.on[i])
        for a, b in itertools.pairwise(loads):
            m.add(a >= b)
        self.loads = loads
        layers: dict[int, list[int]] = {}
        for i, j in enumerate(jobs):
            if j.matrix:
                layers.setdefault(j.seed, []).append(i)
        self.sets: list[Any] = []
        for seed in sorted(layers):
            done = m.new_bool_var(f"set{seed}")
            for i in layers[seed]:
                m.add_implication(done, self.on[i])
            if self.sets:
                m.add_implication(done, self.sets[-1])
            self.sets.append(done)
        self.layer0 = layers[min(layers)] if layers else []
        self.matrix = [self.on[i] for i, j in enumerate(jobs) if j.matrix]
        self.evals = [self.on[i] for i, j in enumerate(jobs) if not j.matrix]
        e_w = len(self.evals) + 1
        m_w = (len(self.matrix) + 1) * e_w
        self.counts = (m_w * sum(self.sets) + e_w * sum(self.matrix) + sum(self.evals))
        self.h = h

    def hint(self, placed: Sequence[Placement | None], n_cards: int) -> None:
        """Start the search from a packing, replayed in whole units so that rounding up
        the durations cannot make it infeasible (a run it pushes past the close is left
        out of the hint, with its evaluations)."""
        self.m.clear_hints()
        free = [0] * n_cards
        ends: dict[int, int] = {}
        order = sorted((i for i, p in enumerate(placed) if p is not None),
                       key=lambda i: (placed[i].start, i))  # type: ignore[union-attr]
        for i in order:
            p = placed[i]
            assert p is not None
            after = self.jobs[i].after
            if after >= 0 and after not in ends:
                continue
            cards = p.cards or tuple(range(self.jobs[i].cards))
            start = max(round(p.start * self.scale), *(free[c] for c in cards),
                        ends.get(after, 0))
            if start + self.dur[i] > self.h:
                continue
            for c in cards:
                free[c] = start + self.dur[i]
            ends[i] = start + self.dur[i]
        for i in range(len(self.jobs)):
            self.m.add_hint(self.on[i], i in ends)
            if i in ends:
                self.m.add_hint(self.start[i], ends[i] - self.dur[i])

    def solve(self, seconds: float) -> tuple[Any, Any]:
        solver = self.cp.CpSolver()
        solver.parameters.num_workers = 1
        solver.parameters.linearization_level = 2
        solver.parameters.max_deterministic_time = max(seconds, 0.05)
        # Wall time only as a safety net: the deterministic limit decides, so a loaded
        # machine gets the same plan as an idle one.
        solver.parameters.max_time_in_seconds = max(10 * seconds, 1.0)
        return solver, solver.solve(self.m)

    def placed(self, solver: Any) -> list[Placement | None]:
        out: list[Placement | None] = []
        for i, j in enumerate(self.jobs):
            if not solver.boolean_value(self.on[i]):
                out.append(None)
                continue
            s = solver.value(self.start[i]) / self.scale
            out.append(Placement(s, s + j.duration, ()))
        return out


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
    best: list[Placement | None] | None = None
    for order in (by_seed, by_start):
        out = serial(jobs, order, n_cards, horizon)
        if any((p is None) != (q is None) for p, q in zip(got, out, strict=True)):
            continue
        if best is None or score(jobs, out) > score(jobs, best):
            best = out
    return best


def pack_cp_sat(jobs: Sequence[Job], n_cards: int, horizon: float,
                fast: list[Placement | None], bound: int, time_limit_s: float) -> Packing:
    """Solve the objective exactly (within `time_limit_s`), starting from the fast packing."""
    ok = runnable(jobs, n_cards, horizon)
    model = _Model(jobs, n_cards, horizon, ok)
    cp = model.cp
    m = model.m
    model.hint(fast, n_cards)
    m.maximize(model.counts)
    solver, status = model.solve(time_limit_s * 0.5)
    best, best_key = fast, score(jobs, fast)
    if status not in (cp.OPTIMAL, cp.FEASIBLE):
        return Packing(fast, False, bound, "cp-sat")
    optimal = status == cp.OPTIMAL
    value = round(solver.objective_value)
    got = _replay(jobs, model.placed(solver), n_cards, horizon)
    if got is not None and score(jobs, got) > best_key:
        best, best_key = got, score(jobs, got)
    matrix_bound = bound
    if optimal and best_key[1] == sum(ok[i] for i, j in enumerate(jobs) if j.matrix):
        matrix_bound = best_key[1]
    elif best_key[1] < bound:
        # The counts' optimum may trade matrix runs for complete sets: bound the matrix
        # runs alone.
        m.maximize(sum(model.matrix))
        model.hint(best, n_cards)
        solver, status = model.solve(time_limit_s * 0.2)
        if status in (cp.OPTIMAL, cp.FEASIBLE):
            matrix_bound = min(bound, math.floor(solver.best_objective_bound + 1e-6))
    m.add(model.counts >= value)
    for stage, share in (("first", 0.15), ("last", 0.15)):
        if stage == "first":
            if not best_key[0]:
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
        solver, status = model.solve(time_limit_s * share)
        if status not in (cp.OPTIMAL, cp.FEASIBLE):
            break
        got = _replay(jobs, model.placed(solver), n_cards, horizon)
        if got is not None and score(jobs, got) > best_key:
            best, best_key = got, score(jobs, got)
        m.add(goal <= solver.value(goal))
    return Packing(best, optimal, max(matrix_bound, best_key[1]), "cp-sat")

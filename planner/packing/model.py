"""The CP-SAT model of a packing, on a grid of whole time units, and the clock every solve
of one command shares.

Imported only when OR-Tools is used. A grid is exact when every duration and the window
are whole numbers of its unit (minutes, seconds, milliseconds or tenths of one, coarsest
first: coarse units search far quicker). Otherwise durations are taken in milliseconds
twice: rounded up, a model whose every schedule also holds for the real durations (the
search), and rounded down, a relaxation that every real schedule satisfies (the bound:
a real schedule's starts rounded down keep every precedence and never put more runs on the
cards at once). A proof only comes from the relaxation, so it holds for the real durations.
"""

from __future__ import annotations

import itertools
import math
import os
import time
from collections.abc import Sequence
from typing import Any, NamedTuple

from planner.packing.objective import EPS_H, Job
from planner.packing.schedule import Placement

SCALES = (60, 3600, 3_600_000, 36_000_000)
"""Solver time units per hour tried for an exact grid, coarsest first."""
FALLBACK = 3_600_000
"""Units per hour when no grid is exact: milliseconds, durations rounded both ways."""
X_LIMIT = 4_000
"""Most run-card pairs given a variable of their own (the bin-packing relaxation, which
tightens bounds): above it, presolving the model costs more than it saves."""
LP_LIMIT = 200
"""Most runs solved with the full linear relaxation: above it, each search node's LP costs
so much that the solver does not even reach the starting packing within seconds."""


DET_PER_S = 0.1
"""Deterministic seconds (the solver's own count of its work) a solve may spend per second
of wall-clock limit. Below what a loaded core delivers (about 0.1 at a load of 7 on two
cores, several times that on an idle one), so the work limit, not the clock, usually ends a
search: the same command then gives the same plan and the same `optimal` however loaded the
machine is. Only under heavier load does the clock stop a search first; its answer may be
weaker then, never false."""


class Clock:
    """One deadline for every solve of a command (monotonic seconds), and one budget of
    deterministic solver work (`DET_PER_S` per second of the limit by default)."""

    def __init__(self, deadline: float, work: float | None = None) -> None:
        self.deadline = deadline
        self.work = (max(0.0, deadline - time.monotonic()) * DET_PER_S if work is None
                     else work)

    def left(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self.deadline - time.monotonic())

    def share(self, part: float) -> float:
        """`part` of the time left."""
        return self.left() * part

    def part(self, part: float) -> Clock:
        """A clock for a sub-task: `part` of the time and of the work left."""
        return Clock(time.monotonic() + self.share(part), self.work * part)

    def spend(self, work: float) -> None:
        """Count a solve's deterministic work against the budget."""
        self.work = max(0.0, self.work - work)


class Grid(NamedTuple):
    """Whole time units for one problem."""

    scale: int
    """Units per hour."""
    exact: bool
    """Whether every duration and the window are whole units (then up == down)."""
    up: list[int]
    """Durations rounded up (0 for a run that cannot run)."""
    down: list[int]
    """Durations rounded down."""
    h: int
    """The window's close with the tolerance, rounded down."""


def _whole(x: float) -> bool:
    return abs(x - round(x)) <= max(1e-6, abs(x) * 1e-12)


def grid(jobs: Sequence[Job], horizon: float, ok: Sequence[bool]) -> Grid:
    """The coarsest exact grid of a problem, else milliseconds rounded both ways."""
    values = [horizon, *(j.duration for j, r in zip(jobs, ok, strict=True) if r)]
    scale, exact = FALLBACK, False
    for s in SCALES:
        if all(_whole(v * s) for v in values):
            scale, exact = s, True
            break
    up, down = [], []
    for j, r in zip(jobs, ok, strict=True):
        x = j.duration * scale if r else 0.0
        up.append(round(x) if _whole(x) else math.ceil(x))
        down.append(round(x) if _whole(x) else math.floor(x))
    h = math.floor((horizon + EPS_H) * scale + 1e-6)
    return Grid(scale, exact, up, down, h)


def workers() -> int:
    """Workers for a solve whose schedule never reaches a plan (a bound, or a proof that
    runs do not fit): one per core, at most eight, so a two-core machine gets two. A search
    whose schedule becomes the plan runs on one worker, which keeps the same preset giving
    the same plan whenever it finishes within the limit."""
    return max(1, min(8, os.cpu_count() or 1))


def deterministic(solver: Any, n_workers: int) -> None:
    """Set `n_workers` workers, interleaved in one thread when more than one: a portfolio
    whose answer depends on its work limit alone, not on how the machine schedules threads
    (a bound or a proof from racing threads could differ from one run to the next)."""
    solver.parameters.num_workers = n_workers
    if n_workers > 1:
        solver.parameters.interleave_search = True


class Model:
    """Runs as optional intervals on `n_cards` identical cards, with durations `dur` (whole
    units) ending by `h`; `all_on` makes every run required (a feasibility question)."""

    def __init__(self, jobs: Sequence[Job], n_cards: int, ok: Sequence[bool],
                 dur: Sequence[int], h: int, scale: int, *, all_on: bool = False) -> None:
        from ortools.sat.python import cp_model

        self.cp = cp_model
        self.m = m = cp_model.CpModel()
        self.jobs, self.dur, self.h, self.scale = jobs, list(dur), h, scale
        self.on: list[Any] = []
        self.start: list[Any] = []
        self.end: list[Any] = []
        intervals, demands = [], []
        for i, (j, r) in enumerate(zip(jobs, ok, strict=True)):
            on = m.new_bool_var(f"on{i}")
            if not r or all_on:
                m.add(on == int(r))
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
        self.assign: list[list[tuple[Any, int]]] = []
        self.loads: list[Any] = []
        self.x: dict[int, list[Any]] = {}
        if len(jobs) * n_cards <= X_LIMIT:
            self._bins(n_cards, ok)
        layers: dict[int, list[int]] = {}
        for i, j in enumerate(jobs):
            if j.matrix:
                layers.setdefault(j.seed, []).append(i)
        self.layers = layers
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
        self.e_w = len(self.evals) + 1
        self.m_w = (len(self.matrix) + 1) * self.e_w
        self.counts = (self.m_w * sum(self.sets) + self.e_w * sum(self.matrix)
                       + sum(self.evals))

    def _bins(self, n_cards: int, ok: Sequence[bool]) -> None:
        """Redundant, for stronger bounds: each run's time lands on `cards` cards, and no
        card is busy longer than the window (a bin-packing relaxation the cumulative
        constraint alone propagates weakly). Cards are identical: loads in falling order."""
        m, jobs = self.m, self.jobs
        xs = self.x
        for c in range(n_cards):
            on_c: list[tuple[Any, int]] = []
            for i, j in enumerate(jobs):
                if ok[i] and j.cards < n_cards:
                    x = m.new_bool_var(f"on{i}c{c}")
                    xs.setdefault(i, []).append(x)
                    on_c.append((x, self.dur[i]))
                elif ok[i]:
                    on_c.append((self.on[i], self.dur[i]))
                else:
                    on_c.append((0, 0))
            load = sum(d * x for x, d in on_c)
            m.add(load <= self.h)
            self.loads.append(load)
            self.assign.append(on_c)
        for i, per_card in xs.items():
            m.add(sum(per_card) == jobs[i].cards * self.on[i])
        for a, b in itertools.pairwise(self.loads):
            m.add(a >= b)

    def value(self, key: tuple[int, int, int]) -> int:
        """The weighted counts objective of (sets, matrix runs, evaluations)."""
        return self.m_w * key[0] + self.e_w * key[1] + key[2]

    def hint(self, placed: Sequence[Placement | None], n_cards: int) -> None:
        """Start the search from a packing, replayed in whole units so that rounding up
        the durations cannot make it infeasible (a run it pushes past the close is left
        out of the hint, with its evaluations)."""
        self.m.clear_hints()
        free = [0] * n_cards
        ends: dict[int, int] = {}
        held: dict[int, tuple[int, ...]] = {}
        order = sorted((i for i, p in enumerate(placed) if p is not None),
                       key=lambda i: (placed[i].start, i))  # type: ignore[union-attr]
        for i in order:
            p = placed[i]
            assert p is not None
            after = self.jobs[i].after
            if after >= 0 and after not in ends:
                continue
            cards = p.cards or tuple(range(self.jobs[i].cards))
            start = max(math.floor(p.start * self.scale), *(free[c] for c in cards),
                        ends.get(after, 0))
            if start + self.dur[i] > self.h:
                continue
            for c in cards:
                free[c] = start + self.dur[i]
            ends[i] = start + self.dur[i]
            held[i] = cards
        for i in range(len(self.jobs)):
            self.m.add_hint(self.on[i], i in ends)
            start = ends[i] - self.dur[i] if i in ends else 0
            self.m.add_hint(self.start[i], start)
            self.m.add_hint(self.end[i], start + self.dur[i])
        # A complete hint: cards in falling order of load (as the model orders them), and
        # each seed set done when all its runs are placed.
        load = [0] * n_cards
        for i, on_cards in held.items():
            for card in on_cards:
                load[card] += self.dur[i]
        rank = {card: r for r, card in enumerate(sorted(range(n_cards), key=lambda c: -load[c]))}
        for i, xs in self.x.items():
            ranks = {rank[c] for c in held.get(i, ())}
            for c, x in enumerate(xs):
                self.m.add_hint(x, c in ranks)
        done = True
        for seed, var in zip(sorted(self.layers), self.sets, strict=True):
            done = done and all(i in ends for i in self.layers[seed])
            self.m.add_hint(var, done)

    def solve(self, clock: Clock, part: float, n_workers: int = 1) -> tuple[Any, Any]:
        """Solve within `part` of the clock's time and of its deterministic work left; the
        work spent is counted on the clock."""
        solver = self.cp.CpSolver()
        deterministic(solver, n_workers)
        solver.parameters.linearization_level = 2 if len(self.jobs) <= LP_LIMIT else 0
        solver.parameters.max_time_in_seconds = max(clock.share(part), 0.01)
        solver.parameters.max_deterministic_time = max(clock.work * part, 0.001)
        status = solver.solve(self.m)
        clock.spend(solver.deterministic_time)
        return solver, status

    def placed(self, solver: Any) -> list[Placement | None]:
        """The solver's packing in hours, with the real durations."""
        out: list[Placement | None] = []
        for i, j in enumerate(self.jobs):
            if not solver.boolean_value(self.on[i]):
                out.append(None)
                continue
            s = solver.value(self.start[i]) / self.scale
            out.append(Placement(s, s + j.duration, ()))
        return out

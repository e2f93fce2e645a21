"""Whether a set of runs fits whole: the yes/no question behind complete seed sets.

    sets_fit(jobs, n_cards, horizon, deadline) -> True | False | None

- `jobs`: every run that must be placed (for K seed sets: their matrix runs and, when
  they count, their evaluations), self-contained: an evaluation's `after` indexes this list.
- `deadline`: `time.monotonic()` seconds by which the answer is due; the solver never runs
  past it (building a model included, up to one model's build).
- `True`: a schedule placing every run exists; one was found and checked with the real
  durations. `False`: proven that none exists, for the real durations (counting bounds of
  `planner.packing.bounds`, or CP-SAT on a grid that rounds durations down).
  `None`: not decided by the deadline, or OR-Tools is not installed (or `solver=False`,
  which never loads it: for a plain plan) and neither counting, the fast packer nor the
  exact search by run length (`planner.packing.loads`) decides.

`fit_schedule` gives the schedule behind a `True`; `more_sets` uses it to complete more
seed sets than a packing has, one set at a time, and fills the rest of the window around
them.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence

from planner.packing.bounds import cannot_fit
from planner.packing.fast import layered, pack_fast, serial, sets_first
from planner.packing.model import Clock, Grid, workers
from planner.packing.objective import Job, score
from planner.packing.schedule import Placement

MIN_SOLVE_S = 0.05
"""No solve is started with less time than this left."""

Schedule = list[Placement | None]


def sets_fit(jobs: Sequence[Job], n_cards: int, horizon: float, deadline: float | Clock, *,
             solver: bool = True) -> bool | None:
    """Whether every one of `jobs` fits on `n_cards` cards in [0, horizon] (see the module
    docstring): True proven fits, False proven does not, None unknown. `solver=False`
    never loads OR-Tools (counting, the fast packer and the exact search by run length
    only: for a plain plan)."""
    return fit_schedule(jobs, n_cards, horizon, deadline, solver=solver)[0]


def fit_schedule(jobs: Sequence[Job], n_cards: int, horizon: float, deadline: float | Clock,
                 *, solver: bool = True) -> tuple[bool | None, Schedule | None]:
    """`sets_fit`'s answer and, when it is True, a schedule placing every job. `deadline`
    may be a `Clock` shared with other solves (its deterministic work budget too)."""
    clock = deadline if isinstance(deadline, Clock) else Clock(deadline)
    if not jobs:
        return True, []
    if cannot_fit(jobs, n_cards, horizon):
        return False, None
    placed = pack_fast(jobs, n_cards, horizon)
    alt = serial(jobs, sets_first(jobs, len(jobs)), n_cards, horizon)
    for got in (placed, alt):
        if all(p is not None for p in got):
            return True, got
    if clock.left() < MIN_SOLVE_S:
        return None, None
    use = solver and importlib.util.find_spec("ortools") is not None
    return _solve(jobs, n_cards, horizon, placed, clock, use)


def _solve(jobs: Sequence[Job], n_cards: int, horizon: float, placed: Schedule,
           clock: Clock, use_solver: bool) -> tuple[bool | None, Schedule | None]:
    from planner.packing.model import Model, grid

    ok = [True] * len(jobs)  # `cannot_fit` has checked that each can run alone
    g = grid(jobs, horizon, ok)
    by_loads = _by_loads(jobs, n_cards, horizon, g, clock, use_solver)
    if by_loads[0] is not None or not use_solver or clock.left() < MIN_SOLVE_S:
        return by_loads
    # The search: runs optional, as many placed as can be, from the fast packing (a
    # complete hint, so the search starts from a solution and improves it).
    model = Model(jobs, n_cards, ok, g.up, g.h, g.scale)
    cp = model.cp
    model.hint(placed, n_cards)
    model.m.maximize(sum(model.on))
    solver, status = model.solve(clock, 1.0 if g.exact else 0.6)
    if status in (cp.OPTIMAL, cp.FEASIBLE):
        got = model.placed(solver)
        if all(p is not None for p in got):
            real = with_cards(jobs, got, n_cards, horizon)
            if real is not None:
                return True, real
        if g.exact and solver.best_objective_bound < len(jobs) - 0.5:
            return False, None
    if g.exact or clock.left() < MIN_SOLVE_S:
        return None, None
    # The proof on the grid that rounds durations down: every real schedule is one of its.
    relax = Model(jobs, n_cards, ok, g.down, g.h, g.scale, all_on=True)
    solver, status = relax.solve(clock, 1.0, workers())
    return (False, None) if status == cp.INFEASIBLE else (None, None)


def _by_loads(jobs: Sequence[Job], n_cards: int, horizon: float, g: Grid, clock: Clock,
              use_solver: bool) -> tuple[bool | None, Schedule | None]:
    """The question as bin packing (`planner.packing.loads`). Built on: each run on
    one card with its evaluations right after it, lengths rounded up, back to back on the
    cards it is dealt to (a restriction: a packing of it is a real schedule). Proof: every
    run's time on each of its cards, rounded down, precedence dropped (a relaxation)."""
    from planner.packing.loads import fit_loads

    if all(j.cards == 1 for j in jobs):
        heads = [i for i, j in enumerate(jobs) if j.after < 0]
        tails: dict[int, list[int]] = {i: [] for i in heads}
        for i, j in enumerate(jobs):
            if j.after >= 0:
                tails[j.after].append(i)
        blocks = [g.up[i] + sum(g.up[e] for e in tails[i]) for i in heads]
        fits, cards = fit_loads(blocks, n_cards, g.h, time.monotonic() + clock.share(0.5),
                                use_solver=use_solver)
        if fits and cards is not None:
            out: Schedule = [None] * len(jobs)
            for c, dealt in enumerate(cards):
                t = 0.0
                for b in dealt:
                    for i in (heads[b], *tails[heads[b]]):
                        out[i] = Placement(t, t + jobs[i].duration, (c,))
                        t += jobs[i].duration
            return True, out
        if fits is False and g.exact and not any(tails.values()):
            return False, None
    pieces = [g.down[i] for i, j in enumerate(jobs) for _ in range(j.cards)]
    fits, _ = fit_loads(pieces, n_cards, g.h, time.monotonic() + clock.share(0.4), workers(),
                        use_solver=use_solver)
    return (False, None) if fits is False else (None, None)


def with_cards(jobs: Sequence[Job], got: Sequence[Placement | None], n_cards: int,
               horizon: float) -> Schedule | None:
    """A solver's packing (starts, no cards) on actual cards, each run at its own start with
    its real duration. Durations on the search grid are rounded up, so a card free at a
    run's start there is free for its real duration too; None if that fails anyway."""
    order = sorted((i for i, p in enumerate(got) if p is not None),
                   key=lambda i: (got[i].start, i))  # type: ignore[union-attr]
    pinned = {i: got[i].start for i in order}  # type: ignore[union-attr]
    out = serial(jobs, order, n_cards, horizon, pinned)
    if any((p is None) != (q is None) for p, q in zip(got, out, strict=True)):
        return None
    return out


def more_sets(jobs: Sequence[Job], n_cards: int, horizon: float, best: Schedule,
              clock: Clock) -> Schedule | None:
    """A packing with more complete seed sets than `best`, when one is found in the clock's
    time: each further set's runs (with those before) must fit whole, with their
    evaluations when they fit too (the question the capacity search asks, so a capacity it
    proved is planned whole), then the other runs fill the room left around them. None
    when none is found."""
    layers: dict[int, list[int]] = {}
    for i, j in enumerate(jobs):
        if j.matrix:
            layers.setdefault(j.seed, []).append(i)
    seeds = sorted(layers)
    have = score(jobs, best)[0]
    out: Schedule | None = None
    for k in range(have + 1, len(seeds) + 1):
        if clock.left() < MIN_SOLVE_S:
            break
        runs = [i for s in seeds[:k] for i in layers[s]]
        mine = set(runs)
        evals = [i for i, j in enumerate(jobs) if j.after in mine]
        filled = None
        for idx in ([*runs, *evals], runs) if evals else (runs,):
            at = {i: n for n, i in enumerate(idx)}
            sub = [jobs[i]._replace(after=at[jobs[i].after]) if jobs[i].after >= 0
                   else jobs[i] for i in idx]
            fits, sched = fit_schedule(sub, n_cards, horizon, clock.part(0.5))
            if fits is True and sched is not None:
                filled = _fill(jobs, idx, sched, n_cards, horizon)
                if filled is not None and score(jobs, filled)[0] >= k:
                    break
                filled = None
        if filled is None:
            break
        out = filled
    return out


def top_up(jobs: Sequence[Job], placed: Schedule, n_cards: int, horizon: float) -> Schedule:
    """`placed` with every run left out tried again in the room it leaves (a solver's
    packing replayed earlier may leave room for runs it did not place)."""
    idx = [i for i, p in enumerate(placed) if p is not None]
    got = _fill(jobs, idx, [placed[i] for i in idx], n_cards, horizon)
    return got if got is not None and score(jobs, got) >= score(jobs, placed) else placed


def _fill(jobs: Sequence[Job], idx: list[int], sched: Schedule, n_cards: int,
          horizon: float) -> Schedule | None:
    """The runs `idx` where `sched` puts them, then every other run at its earliest place
    around them, seed layer by seed layer."""
    at = {i: p.start for i, p in zip(idx, sched, strict=True) if p is not None}
    head = sorted(at, key=lambda i: (at[i], i))
    taken = set(head)
    order = [*head, *(i for i in layered(jobs) if i not in taken)]
    out = serial(jobs, order, n_cards, horizon, at)
    if any(out[i] is None for i in head):
        return None
    return out

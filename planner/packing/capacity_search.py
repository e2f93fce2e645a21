"""The capacity search of a training plan: complete seed sets and extra variants, packed
with the packer between a count it has placed and the bound of `planner.packing.capacity`.

Every count tried is packed whole by `planner.packing.pack.pack` (fast), so planning the
campaign with that many seeds places every run. The upper end is tried first: most windows
reach it, which proves the answer. When it does not fit, the units its packing completes
are tried next, then counts climbing from there until one does not fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from planner.packing.capacity import (
    MAX_EXTRA,
    MAX_JOBS,
    MAX_SETS,
    Capacity,
    SetTemplate,
    complete_layers,
    room_for,
    sets_bound,
)
from planner.packing.objective import Job, runnable, score
from planner.packing.pack import Packing, Solver, pack
from planner.packing.witness import remember

WORK_RUNS = 30_000
WORK_PER_RUN = 10
"""Runs the search may pack in all, its trials together: WORK_RUNS plus WORK_PER_RUN per run
of the plan. A window of many times the asked matrix packs a few large trials, not dozens."""

Trial = Callable[[int], tuple[bool, int]]
"""Packs k units: (whether every run is placed, units that packing completes)."""


def _all_placed(p: Packing) -> bool:
    return all(x is not None for x in p.placements)


def climb(fits: Trial, lo: int, hi: int) -> int:
    """Largest count found to fit in [lo, hi], `lo` known to fit: `hi` first, then what its
    packing completes, then outward from there in doubling steps (up after a fit, down
    after a miss) to the first change, and halving between."""
    if lo >= hi:
        return lo
    ok, got = fits(hi)
    if ok:
        return hi
    upper = hi  # known not to fit
    up = True
    if lo < got < upper:
        ok, _ = fits(got)
        if ok:
            lo = got
        else:
            upper, up = got, False
    step = 1
    while lo + 1 < upper:
        t = min(lo + step, upper - 1) if up else max(upper - step, lo + 1)
        ok, _ = fits(t)
        if ok:
            lo = t
            if not up:
                break
        else:
            upper = t
            if up:
                break
        step *= 2
    while lo + 1 < upper:
        mid = (lo + upper) // 2
        ok, _ = fits(mid)
        if ok:
            lo = mid
        else:
            upper = mid
    return lo


class SetSearch:
    """The seed-set and extra-variant searches on one matrix, window and card count."""

    def __init__(self, jobs: Sequence[Job], n_cards: int, horizon: float) -> None:
        self.template = SetTemplate(jobs)
        self.n_cards, self.horizon = n_cards, horizon
        self.work = WORK_RUNS + WORK_PER_RUN * len(jobs)

    def _pack(self, jobs: Sequence[Job]) -> Packing | None:
        """The fast packing of `jobs`, or None once the search has packed its share of runs
        (a count not packed is not claimed: the answer stays one that was packed whole)."""
        if len(jobs) > self.work:
            return None
        self.work -= len(jobs)
        return pack(jobs, self.n_cards, self.horizon)

    def fits(self, sets: int) -> tuple[bool, int]:
        """Whether the fast packer places every run of `sets` complete seed sets, and how
        many leading sets its packing completes."""
        if sets <= 0:
            return True, 0
        jobs = self.template.build(sets)
        got = self._pack(jobs)
        if got is None:
            return False, 0
        whole = _all_placed(got)
        if whole:
            remember(jobs, self.n_cards, self.horizon, got.placements)
        return whole, complete_layers(jobs, got.placements)

    def search(self, asked: int, packing: Packing, jobs: Sequence[Job], *,
               solver: Solver = "fast", time_limit_s: float = 5.0, work_s: float | None = None
               ) -> tuple[int, bool, int]:
        """(sets found, proven, upper bound), given the plan's own `packing` of `asked` sets;
        `work_s`: the seconds of limit the solver's deterministic work budget is counted
        from (`time_limit_s` when None)."""
        bound = sets_bound(self.template, self.n_cards, self.horizon)
        cap = min(bound, MAX_SETS, MAX_JOBS // max(1, len(self.template.jobs)))
        lo = min(complete_layers(jobs, packing.placements), cap)
        if lo < asked:
            # A packing of fewer sets is not the asked one cut short: check it is whole.
            while lo > 0 and not self.fits(lo)[0]:
                lo -= 1
        sets = climb(self.fits, lo, cap)
        if sets >= bound:
            return sets, True, sets
        if (sets < asked and packing.optimal is True
                and score(jobs, packing.placements)[0] == sets):
            # The plan's packing is proven to complete no more matrix sets of the asked
            # seeds: one more whole set (evaluations included) cannot fit either.
            return sets, True, sets
        if solver == "cp-sat" and time_limit_s > 0:
            return self._prove(sets, cap, bound, time_limit_s,
                               time_limit_s if work_s is None else work_s)
        return sets, False, bound

    def _prove(self, sets: int, cap: int, bound: int, time_limit_s: float, work_s: float
               ) -> tuple[int, bool, int]:
        """Ask the optimizer whether more whole sets fit, while time is left: `sets_fit`
        answers for the real durations (a found schedule is checked, a refusal is proven on
        durations rounded down). Steps double while they fit and halve when they do not, so
        a window with room for many more sets is not climbed one set at a time. The schedule
        behind each count found is kept (`planner.packing.witness`) for its plan."""
        from planner.packing.model import DET_PER_S, Clock
        from planner.packing.sets import fit_schedule

        clock = Clock(time.monotonic() + time_limit_s, work_s * DET_PER_S)
        step = 1
        while sets < cap and clock.left() > 0:
            step = min(step, cap - sets)
            jobs = self.template.build(sets + step)
            fits, witness = fit_schedule(jobs, self.n_cards, self.horizon, clock)
            if fits is True and witness is not None:
                remember(jobs, self.n_cards, self.horizon, witness)
                sets += step
                step *= 2
            elif step > 1:
                step //= 2
            elif fits is False:
                return sets, True, sets
            else:
                break
        return sets, sets >= bound, bound

    def median_variant(self) -> tuple[list[Job], list[Job]]:
        """The run and evaluations of the variant whose card-hours (training plus its
        evaluations) are the median of the variants' (the lower of the two middle ones; the
        baseline when there are no variants); evaluations' `after` count from the run."""
        t = self.template
        cost = [j.duration * j.cards for j in t.train]
        for e in t.evals:
            cost[e.after] += e.duration * e.cards
        pool = sorted((cost[i], i) for i in range(1, len(t.train))) or [(cost[0], 0)]
        pick = pool[(len(pool) - 1) // 2][1]
        return [t.train[pick]], [e._replace(after=0) for e in t.evals if e.after == pick]

    def extra_variants(self, asked: int) -> int:
        """More median variants (`median_variant`) that fit beside `asked` seed sets, each on
        every asked seed with its evaluations; to be asked only when the asked sets fit."""
        run, evals = self.median_variant()
        base = self.template.build(asked)
        one = [*run, *evals]
        if not all(runnable(one, self.n_cards, self.horizon)):
            return 0
        most = min(MAX_EXTRA, max(0, MAX_JOBS - len(base)) // (asked * len(one)))
        hi = room_for(base, one * asked, self.n_cards, self.horizon, most)

        def fits(k: int) -> tuple[bool, int]:
            if k <= 0:
                return True, 0
            jobs = self.template.build(asked, run * k, [e._replace(after=e.after + n)
                                                        for n in range(k) for e in evals])
            got = self._pack(jobs)
            if got is None:
                return False, 0
            missing = sum(1 for p in got.placements if p is None)
            # A count to try next: as many copies fewer as the runs left out would fill.
            return not missing, k - -(-missing // (asked * len(one)))

        return climb(fits, 0, hi)


def training_capacity(jobs: Sequence[Job], packing: Packing, asked: int, n_cards: int,
                      horizon: float, *, solver: Solver = "fast", time_limit_s: float = 5.0,
                      extras: bool = True, work_s: float | None = None) -> Capacity:
    """The capacity of a training plan whose `jobs` (`asked` seed layers) packed as
    `packing`; cp-sat proves the set count within `time_limit_s` when `solver` asks (its
    deterministic work counted from `work_s` seconds, `time_limit_s` when None).
    `extras`: also search the extra variants (left out, None, when False). The schedule
    that proves the count is kept for planning it (`planner.packing.witness`)."""
    search = SetSearch(jobs, n_cards, horizon)
    sets, proven, bound = search.search(asked, packing, jobs, solver=solver,
                                        time_limit_s=time_limit_s, work_s=work_s)
    extra = (search.extra_variants(asked) if sets >= asked else 0) if extras else None
    return Capacity(seed_sets=sets, seed_sets_asked=asked, seed_sets_proven=proven,
                    seed_sets_upper_bound=max(bound, sets), extra_variants=extra)

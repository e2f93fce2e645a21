"""How much the window holds: complete seed sets, extra variants, representation versions.

A seed set is one seed's whole matrix: the baseline, every variant, and their evaluations.
The training search packs whole sets with the packer (`planner.planning.packing.pack`) and
brackets the answer between a set count it has placed and one no schedule can reach:

- the lower end is the asked sets when they all fit, else the leading sets the plan's own
  packing completes (checked by packing exactly that many);
- the upper end is `sets_bound`: runs of equal width w on n cards never have more than
  n // w running at once, so a schedule is n // w tracks, each a sequence of runs. No set
  count fits whose runs need more than tracks × window hours (each track may overrun by
  `EPS_H`), nor one that puts more than m runs longer than window ÷ (m + 1) on each track,
  for any m.

The search packs the upper end first (most plans reach it, which proves the answer), then
halves the interval. With `cp-sat` a count the fast packer cannot prove is proven by asking
the optimizer whether one more set fits.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

from planner.planning.objective import EPS_H, Job, runnable
from planner.planning.packing import Packing, Solver, pack
from planner.spec.base import Lax

MAX_SETS = 1000
"""Most seed sets searched: the most seeds a preset may list."""
MAX_EXTRA = 1000
"""Most extra variants searched: the most variants a preset may list."""
MAX_JOBS = 100_000
"""Most runs one packing in the search holds: the most a matrix may expand to."""
_THRESHOLDS = 64
"""Values of m tried in the long-run bound (window ÷ (m + 1))."""


class Capacity(Lax):
    """How much this window holds on these cards, beyond what the preset asks."""

    seed_sets: int | None = None
    """Most complete seed sets (baseline, every variant and their evaluations) that fit;
    seed ids continue the preset's list (training campaigns)."""
    seed_sets_asked: int | None = None
    """Seed sets the preset asks for (its seeds)."""
    seed_sets_proven: bool | None = None
    """True when no schedule fits one more complete set."""
    seed_sets_upper_bound: int | None = None
    """No schedule fits more complete sets than this (tracks × window hours and the long-run
    count; the optimizer's proof under cp-sat)."""
    extra_variants: int | None = None
    """More one-factor variants, each costing what the median variant costs (its training and
    its evaluations), that fit beside the asked seed sets on every asked seed."""
    versions: int | None = None
    """Most representation versions of this corpus that fit (embedding campaigns)."""
    versions_asked: int | None = None
    """Representation versions the preset asks for."""
    documents: int | None = None
    """Most documents of this corpus's length distribution one version covers in the
    window."""
    batches: int | None = None
    """Batches those documents make with the planned batching strategy."""


class SetTemplate:
    """One seed layer of a training matrix: its runs and their evaluations, in plan order."""

    def __init__(self, jobs: Sequence[Job]) -> None:
        first = [i for i, j in enumerate(jobs) if j.matrix and j.seed == 0]
        where = {i: n for n, i in enumerate(first)}
        self.train = [jobs[i] for i in first]
        self.evals = [j._replace(after=where[j.after]) for j in jobs
                      if not j.matrix and j.after in where]

    def build(self, sets: int, extra: Sequence[Job] = (), extra_evals: Sequence[Job] = ()
              ) -> list[Job]:
        """The jobs of `sets` seed layers as the matrix expands them (runs seed by seed,
        then evaluations seed by seed), each layer with `extra` runs after its own and
        `extra_evals` (whose `after` counts from the first extra run) after its evaluations."""
        train = [*self.train, *extra]
        evals = [*self.evals,
                 *(j._replace(after=j.after + len(self.train)) for j in extra_evals)]
        width = len(train)
        out = [j._replace(seed=k) for k in range(sets) for j in train]
        out += [j._replace(after=k * width + j.after) for k in range(sets) for j in evals]
        return out

    @property
    def jobs(self) -> list[Job]:
        """One layer's jobs."""
        return self.build(1)


def _needs(jobs: Sequence[Job], tracks: int, horizon: float) -> list[float]:
    """What `jobs` use of the window's resources, in units of the capacity `_caps` gives:
    track-hours, then for each m the runs longer than window ÷ (m + 1)."""
    limit = horizon + EPS_H
    out = [sum(j.duration for j in jobs)]
    for m in range(1, _THRESHOLDS + 1):
        out.append(float(sum(1 for j in jobs if j.duration * (m + 1) > limit)))
    return out


def _caps(tracks: int, horizon: float) -> list[float]:
    return [tracks * (horizon + EPS_H)] + [float(m * tracks) for m in
                                           range(1, _THRESHOLDS + 1)]


def _most(base: Sequence[float], unit: Sequence[float], caps: Sequence[float]) -> int:
    """Largest k with base + k × unit within caps, component by component."""
    best = math.inf
    for b, u, c in zip(base, unit, caps, strict=True):
        if b > c + 1e-9:
            return 0
        if u > 0:
            best = min(best, math.floor((c - b) / u + 1e-9))
    return MAX_SETS * 1000 if best == math.inf else int(best)


def _tracks(jobs: Sequence[Job], n_cards: int) -> int:
    widths = {j.cards for j in jobs} or {1}
    # Runs of mixed widths: fall back to a card per track, with durations × widths.
    return n_cards // widths.pop() if len(widths) == 1 else n_cards


def _scaled(jobs: Sequence[Job], n_cards: int) -> list[Job]:
    widths = {j.cards for j in jobs}
    if len(widths) <= 1:
        return list(jobs)
    return [j._replace(duration=j.duration * j.cards) for j in jobs]


def sets_bound(template: SetTemplate, n_cards: int, horizon: float) -> int:
    """Complete seed sets no schedule exceeds (see the module's docstring)."""
    one = template.jobs
    if not all(runnable(one, n_cards, horizon)):
        return 0
    tracks = _tracks(one, n_cards)
    caps = _caps(tracks, horizon)
    return _most([0.0] * len(caps), _needs(_scaled(one, n_cards), tracks, horizon), caps)


def complete_layers(jobs: Sequence[Job], placed: Sequence[object]) -> int:
    """Leading seed layers whose every run and evaluation is placed."""
    broken: set[int] = set()
    layers: set[int] = set()
    for j, p in zip(jobs, placed, strict=True):
        layer = j.seed if j.matrix else jobs[j.after].seed if j.after >= 0 else -1
        if layer < 0:
            continue
        layers.add(layer)
        if p is None:
            broken.add(layer)
    n = 0
    while n in layers and n not in broken:
        n += 1
    return n


def _all_placed(p: Packing) -> bool:
    return all(x is not None for x in p.placements)


class SetSearch:
    """The seed-set search on one matrix, window and card count."""

    def __init__(self, jobs: Sequence[Job], n_cards: int, horizon: float) -> None:
        self.template = SetTemplate(jobs)
        self.n_cards, self.horizon = n_cards, horizon

    def fits(self, sets: int) -> bool:
        """Whether the fast packer places every run of `sets` complete seed sets."""
        if sets <= 0:
            return True
        jobs = self.template.build(sets)
        return _all_placed(pack(jobs, self.n_cards, self.horizon))

    def search(self, asked: int, packing: Packing, jobs: Sequence[Job], *,
               solver: Solver = "fast", time_limit_s: float = 5.0
               ) -> tuple[int, bool, int]:
        """(sets found, proven, upper bound), given the plan's own `packing` of `asked` sets."""
        bound = sets_bound(self.template, self.n_cards, self.horizon)
        cap = min(bound, MAX_SETS, MAX_JOBS // max(1, len(self.template.jobs)))
        lo = complete_layers(jobs, packing.placements)
        if lo < asked:
            # A packing of fewer sets is not the asked one cut short: check it is whole.
            while lo > 0 and not self.fits(lo):
                lo -= 1
        lo = min(lo, cap)
        hi = cap
        if lo < hi and self.fits(hi):
            lo = hi
        hi -= 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.fits(mid):
                lo = mid
            else:
                hi = mid - 1
        if lo >= bound:
            return lo, True, lo
        if solver == "cp-sat" and time_limit_s > 0:
            return self._prove(lo, bound, time_limit_s)
        return lo, False, bound

    def _prove(self, sets: int, bound: int, time_limit_s: float) -> tuple[int, bool, int]:
        """Ask the optimizer whether one more set fits, while time is left."""
        until = time.monotonic() + time_limit_s
        while sets < bound:
            left = until - time.monotonic()
            if left <= 0:
                break
            jobs = self.template.build(sets + 1)
            got = pack(jobs, self.n_cards, self.horizon, solver="cp-sat", time_limit_s=left)
            if _all_placed(got):
                sets += 1
                continue
            matrix = sum(1 for j in jobs if j.matrix)
            if got.optimal is True or got.matrix_bound < matrix:
                return sets, True, sets
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
        every asked seed; 0 unless the asked sets fit themselves."""
        run, evals = self.median_variant()
        base = self.template.build(asked)
        one = [*run, *evals]
        if not all(runnable(one, self.n_cards, self.horizon)):
            return 0
        tracks = _tracks(base, self.n_cards)
        caps = _caps(tracks, self.horizon)
        unit = [asked * x for x in _needs(_scaled(one, self.n_cards), tracks, self.horizon)]
        bound = _most(_needs(_scaled(base, self.n_cards), tracks, self.horizon), unit, caps)
        per = asked * len(one)
        hi = min(bound, MAX_EXTRA, max(0, MAX_JOBS - len(base)) // per)

        def fits(k: int) -> bool:
            jobs = self.template.build(asked, run * k, [e._replace(after=e.after + n)
                                                        for n in range(k) for e in evals])
            return _all_placed(pack(jobs, self.n_cards, self.horizon))

        lo = 0
        if hi > 0 and fits(hi):
            return hi
        hi -= 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if fits(mid):
                lo = mid
            else:
                hi = mid - 1
        return lo


def training_capacity(jobs: Sequence[Job], packing: Packing, asked: int, n_cards: int,
                      horizon: float, *, solver: Solver = "fast",
                      time_limit_s: float = 5.0) -> Capacity:
    """The capacity of a training plan whose `jobs` (`asked` seed layers) packed as
    `packing`; cp-sat proves the set count within `time_limit_s` when `solver` asks."""
    search = SetSearch(jobs, n_cards, horizon)
    sets, proven, bound = search.search(asked, packing, jobs, solver=solver,
                                        time_limit_s=time_limit_s)
    extra = search.extra_variants(asked) if sets >= asked else 0
    return Capacity(seed_sets=sets, seed_sets_asked=asked, seed_sets_proven=proven,
                    seed_sets_upper_bound=max(bound, sets), extra_variants=extra)

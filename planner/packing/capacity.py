"""How much the window holds: complete seed sets, extra variants, representation versions.

A seed set is one seed's whole matrix: the baseline, every variant, and their evaluations.
The training search packs whole sets with the packer (`planner.packing.pack.pack`) and
brackets the answer between a set count it has placed and one no schedule can reach:

- the lower end is the asked sets when they all fit, else the leading sets the plan's own
  packing completes (checked by packing exactly that many);
- the upper end is `sets_bound`: runs of equal width w on n cards never have more than
  n // w running at once, so a schedule is n // w tracks, each a sequence of runs. No set
  count fits whose runs need more than tracks × window hours (each track may overrun by
  `EPS_H`), nor one that puts more than m runs longer than window ÷ (m + 1) on each track,
  for any m; nor, for runs of one width, one whose durations the tracks cannot hold as
  bins (`planner.packing.binpack_bound`).

The search packs the upper end first (most plans reach it, which proves the answer), then
halves the interval. With `cp-sat` a count the fast packer cannot prove is proven by asking
the optimizer whether one more set fits.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from planner.packing.objective import EPS_H, Job, runnable
from planner.spec.base import Lax

MAX_SETS = 1000
"""Most seed sets searched: the most seeds a preset may list."""
MAX_EXTRA = 1000
"""Most extra variants searched: the most variants a preset may list."""
UNBOUNDED = 10**9
"""What the counting bounds give when nothing bounds them (no run takes any time)."""
MAX_JOBS = 100_000
"""Most runs one packing in the search holds: the most a matrix may expand to."""
_THRESHOLDS = 16
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


def more_seeds(seeds: Sequence[int], count: int) -> list[int]:
    """`count` seeds: the first of `seeds`, then ids continuing after the largest."""
    out = list(seeds[:count])
    nxt = max(seeds) + 1 if seeds else 0
    while len(out) < count:
        out.append(nxt)
        nxt += 1
    return out


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


def _needs(jobs: Sequence[Job], horizon: float, mixed: bool = False) -> list[float]:
    """What `jobs` use of the window's resources, in units of the capacity `_caps` gives:
    track-hours, then for each m the runs longer than window ÷ (m + 1). With `mixed`
    widths a track is a card: a run counts once per card it holds."""
    limit = horizon + EPS_H
    runs = sorted((j.duration, j.cards if mixed else 1) for j in jobs)
    durations = [d for d, _ in runs]
    weight = [0]
    for _, w in reversed(runs):
        weight.append(weight[-1] + w)  # weight[i]: cards held by the i longest runs
    out = [float(sum(d * w for d, w in runs))]
    # Counted by bisection on the sorted durations: a plan computes this on every replan.
    for m in range(1, _THRESHOLDS + 1):
        longer = len(durations) - bisect.bisect_right(durations, limit / (m + 1))
        out.append(float(weight[longer]))
        if longer == len(durations):
            # Every run counts from here on: the rest only repeat the total.
            out += [out[-1]] * (_THRESHOLDS - m)
            break
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
    return UNBOUNDED if best == math.inf else int(best)


def _tracks(jobs: Sequence[Job], n_cards: int) -> int:
    widths = {j.cards for j in jobs} or {1}
    # Runs of mixed widths: fall back to a card per track, with durations × widths.
    return n_cards // widths.pop() if len(widths) == 1 else n_cards


def room_for(base: Sequence[Job], unit: Sequence[Job], n_cards: int, horizon: float,
             most: int) -> int:
    """Copies of `unit` (at most `most`) no schedule exceeds beside `base`: the track-hour
    and long-run counts, then, for runs of one width, the bin-packing bound on the tracks
    (`planner.packing.binpack_bound`)."""
    tracks = _tracks([*base, *unit], n_cards)
    mixed = len({j.cards for j in (*base, *unit)}) > 1
    caps = _caps(tracks, horizon)
    k = min(most, _most(_needs(base, horizon, mixed), _needs(unit, horizon, mixed), caps))
    if k <= 0 or mixed:
        return max(0, k)
    from planner.packing.binpack_bound import most_copies

    return most_copies([j.duration for j in base], [j.duration for j in unit], tracks,
                       horizon + EPS_H, k)


def sets_bound(template: SetTemplate, n_cards: int, horizon: float) -> int:
    """Complete seed sets no schedule exceeds (see the module's docstring)."""
    one = template.jobs
    if not all(runnable(one, n_cards, horizon)):
        return 0
    return room_for([], one, n_cards, horizon, UNBOUNDED)


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

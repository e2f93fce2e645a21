"""Whole seed sets as items: a best-fit-decreasing packing of the first K sets' runs.

Runs of one width w on n cards can be given n // w tracks of w cards each, a track a
sequence of runs back to back. Packing the runs of K complete seed sets then becomes bin
packing: each run (with its evaluations right after it on the same cards, when they are
asked for) is an item as long as their sum, and the tracks are bins of the window's length.
Best-fit decreasing puts the longest item first, each on the track it leaves the least room
on; it completes sets that a list scheduler, which spreads the same runs over the cards
freed first (worst fit), leaves one run short. A thousand runs take milliseconds.

The answer is where each run starts (`{job index: start}`), for the fast packer to pin and
fill the rest of the window around (`planner.packing.fast`), or None when the
heuristic does not fit the K sets whole (which proves nothing).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

from planner.packing.objective import EPS_H, Job

MAX_TRIES = 8
"""Set counts tried by halving below the most that may fit: each is a pass over the runs."""


def layers_of(jobs: Sequence[Job]) -> dict[int, list[int]]:
    """Matrix runs by seed layer."""
    out: dict[int, list[int]] = {}
    for i, j in enumerate(jobs):
        if j.matrix:
            out.setdefault(j.seed, []).append(i)
    return out


def whole_sets(jobs: Sequence[Job], n_cards: int, horizon: float, k: int, *,
               evals: bool) -> dict[int, float] | None:
    """Starts of the matrix runs of the first `k` seed layers (with their evaluations when
    `evals`), packed by best-fit decreasing on tracks; None when they do not fit so, or when
    their runs are of mixed widths."""
    layers = layers_of(jobs)
    seeds = sorted(layers)[:k]
    if len(seeds) < k:
        return None
    runs = [i for s in seeds for i in layers[s]]
    tails: dict[int, list[int]] = {i: [] for i in runs}
    if evals:
        for e, j in enumerate(jobs):
            if j.after in tails:
                tails[j.after].append(e)
    widths = {jobs[i].cards for i in runs} | {jobs[e].cards for t in tails.values() for e in t}
    if len(widths) != 1:
        return None
    width = widths.pop()
    tracks = n_cards // width
    if tracks <= 0:
        return None
    cap = horizon + EPS_H
    items = sorted(((jobs[i].duration + sum(jobs[e].duration for e in tails[i]), i)
                    for i in runs), key=lambda t: (-t[0], jobs[t[1]].seed, t[1]))
    # (load, track) in rising order: the fullest track that still takes an item is the one
    # just below `cap - length`.
    loads = [(0.0, t) for t in range(tracks)]
    dealt: list[list[int]] = [[] for _ in range(tracks)]
    for length, i in items:
        at = bisect.bisect_right(loads, (cap - length, tracks)) - 1
        if at < 0:
            return None
        load, t = loads.pop(at)
        dealt[t].append(i)
        bisect.insort(loads, (load + length, t))
    starts: dict[int, float] = {}
    for on_track in dealt:
        # Earlier seeds first on their track: a window cut short still holds whole sets.
        at_time = 0.0
        for i in sorted(on_track, key=lambda i: (jobs[i].seed, -jobs[i].duration, i)):
            for r in (i, *tails[i]):
                starts[r] = at_time
                at_time += jobs[r].duration
    return starts


def most_whole(jobs: Sequence[Job], n_cards: int, horizon: float, lo: int, hi: int
               ) -> list[dict[int, float]]:
    """Best-fit-decreasing starts for the most sets in (lo, hi] it fits, found by halving
    (a few passes over the runs): with the sets' evaluations, and without (then the
    evaluations fill in around them). Empty when no count above `lo` fits so."""
    has_evals = any(j.after >= 0 for j in jobs)

    def fit(k: int) -> list[dict[int, float]]:
        out = []
        for with_evals in ((True, False) if has_evals else (False,)):
            got = whole_sets(jobs, n_cards, horizon, k, evals=with_evals)
            if got is not None:
                out.append(got)
        return out

    best: list[dict[int, float]] = []
    top = fit(hi) if hi > lo else []
    if top:
        return top
    tries = 0
    # fit(lo) is taken as true (the caller has a packing of lo sets); hi does not fit.
    while lo + 1 < hi and tries < MAX_TRIES:
        tries += 1
        mid = (lo + hi) // 2
        got = fit(mid)
        if got:
            lo, best = mid, got
        else:
            hi = mid
    return best

"""The fast packer: plain Python, for live replans and machines without an optimizer.

A packing is built from a priority order by placing each run, in turn, at the earliest
time its cards are free for its whole duration, idle gaps left earlier included (backfill).
Several orders are tried and the best by the objective (`planner.packing.pack.score`) is kept:

- one seed layer at a time, longest first (runs on more cards before runs on fewer), then the
  evaluations: earlier seeds end up first on their cards, so a window cut short still holds
  complete sets;
- the preset's own order, with backfill;
- the runs of one more complete seed set than the first order holds, with those before,
  longest first as one packing, then the rest seed layer by seed layer (a bin-packing
  order that completes more sets);
- seed layer by seed layer, each run followed by its evaluations (a set's evaluations are
  part of it, not leftovers), and with the evaluations shortest first (the most fit so);
- the most whole seed sets best-fit decreasing packs onto tracks of cards
  (`planner.packing.whole`), with the rest of the window filled around them;
- today's list scheduler (`planner.packing.schedule.schedule`), so the result is never
  worse than it by the objective;

and, when a run is still left out, a local repair (the runs placed kept where they are, those
left out tried again in the room left, evaluations shortest first) and a bounded local search
over the order (a run left out is moved ahead of others, or swapped with one placed), which
moves runs between cards.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence

from planner.packing.objective import EPS_H, Job, Key, capacity_bound, runnable, score
from planner.packing.schedule import Placement, schedule
from planner.packing.whole import most_whole

# Orders tried by the local search, across all moves: enough for campaigns of tens of runs,
# and shrinking with size so a thousand-run matrix replans in milliseconds.
_SEARCH_WORK = 2000
_SEARCH_CAP = 60
# Further complete seed sets tried as one longest-first packing each (one pass each: a
# thousand-run replan affords one).
_SETS_TRIED = 1


class _Cards:
    """Free time on each card: when it is free for good, and the idle gaps before that."""

    def __init__(self, n: int) -> None:
        self.tail = [0.0] * n
        self.gaps: list[list[tuple[float, float]]] = [[] for _ in range(n)]
        self.n_gaps = 0

    def _one(self, d: float, ready: float, limit: float) -> tuple[float, int, int] | None:
        """(start, card, gap index or -1) of the earliest place for a 1-card run."""
        best: tuple[float, float, int, int] | None = None
        if self.n_gaps:
            for c, gl in enumerate(self.gaps):
                for gi, (s, e) in enumerate(gl):
                    st = s if s > ready else ready
                    if st + d <= e + EPS_H:
                        cand = (st, e - st - d, c, gi)
                        if best is None or cand < best:
                            best = cand
                        break
        tail = self.tail
        lo = min(tail)
        if ready <= lo:
            st, c = lo, tail.index(lo)
        else:
            # Several cards are free by `ready`: the one freed last leaves the least idle.
            c = max((c for c in range(len(tail)) if tail[c] <= ready),
                    key=tail.__getitem__, default=-1)
            if c < 0:
                st, c = lo, tail.index(lo)
            else:
                st = ready
        cand = (st, math.inf, c, -1)
        if best is None or cand < best:
            best = cand
        if best[0] + d > limit + EPS_H:
            return None
        return best[0], best[2], best[3]

    def _free_over(self, c: int, t: float, d: float) -> tuple[float, int] | None:
        """(idle before t, gap index or -1) when card c is free over [t, t + d]."""
        if self.tail[c] <= t + EPS_H:
            return t - self.tail[c], -1
        for gi, (s, e) in enumerate(self.gaps[c]):
            if s <= t + EPS_H and t + d <= e + EPS_H:
                return t - s, gi
            if s > t:
                break
        return None

    def _many(self, k: int, d: float, ready: float, limit: float
              ) -> tuple[float, list[tuple[int, int]]] | None:
        """(start, [(card, gap index or -1)]) of the earliest place for a k-card run."""
        n = len(self.tail)
        if self.n_gaps:
            times = {ready, *(t for t in self.tail if t > ready)}
            times.update(s for gl in self.gaps for s, _ in gl if s > ready)
        else:
            times = {max(ready, sorted(self.tail)[k - 1])}
        for t in sorted(times):
            if t + d > limit + EPS_H:
                return None
            free = []
            for c in range(n):
                got = self._free_over(c, t, d)
                if got is not None:
                    free.append((got[0], c, got[1]))
            if len(free) >= k:
                # The cards freed last before t: a multi-card run leaves the least idle.
                free.sort()
                return t, [(c, gi) for _, c, gi in free[:k]]
        return None

    def place(self, job: Job, ready: float, limit: float) -> Placement | None:
        """Put `job` at its earliest place at or after `ready`; None when it cannot end by
        `limit`."""
        d, k = job.duration, job.cards
        if k > len(self.tail) or not math.isfinite(d) or ready + d > limit + EPS_H:
            return None
        if k == 1 and not self.n_gaps:
            # No idle gap anywhere and every card busy past `ready`: the card freed first
            # takes it, right at its tail (what `_one` and `_take` find, without their
            # candidates; most runs of a matrix are placed so).
            tail = self.tail
            lo = min(tail)
            if ready <= lo:
                if lo + d > limit + EPS_H:
                    return None
                card = tail.index(lo)
                tail[card] = max(lo, lo + d)
                return Placement(lo, lo + d, (card,))
        if k == 1:
            one = self._one(d, ready, limit)
            if one is None:
                return None
            start, card, gi = one
            self._take(card, gi, start, start + d)
            return Placement(start, start + d, (card,))
        many = self._many(k, d, ready, limit)
        if many is None:
            return None
        start, taken = many
        for card, gi in taken:
            self._take(card, gi, start, start + d)
        return Placement(start, start + d, tuple(sorted(c for c, _ in taken)))

    def _take(self, c: int, gi: int, start: float, end: float) -> None:
        gl = self.gaps[c]
        if gi < 0:
            if start > self.tail[c] + EPS_H:
                gl.append((self.tail[c], start))
                self.n_gaps += 1
            self.tail[c] = max(self.tail[c], end)
            return
        s, e = gl.pop(gi)
        self.n_gaps -= 1
        pieces = [(a, b) for a, b in ((s, start), (end, e)) if b - a > EPS_H]
        gl[gi:gi] = pieces
        self.n_gaps += len(pieces)


def serial(jobs: Sequence[Job], order: Sequence[int], n_cards: int, horizon: float,
           pinned: dict[int, float] | None = None) -> list[Placement | None]:
    """Place jobs in `order`, each at its earliest place; an evaluation whose training run
    is not placed (yet) is left out. A job in `pinned` starts exactly there (or is left
    out): give them first, in start order, and a schedule of them is kept as it is."""
    cards = _Cards(n_cards)
    out: list[Placement | None] = [None] * len(jobs)
    for i in order:
        job = jobs[i]
        ready = 0.0
        if job.after >= 0:
            before = out[job.after]
            if before is None:
                continue
            ready = before.end
        if pinned is not None and i in pinned:
            at = max(ready, pinned[i])
            out[i] = cards.place(job, at, at + job.duration)
            continue
        out[i] = cards.place(job, ready, horizon)
    return out


def layered(jobs: Sequence[Job]) -> list[int]:
    """Seed layer by seed layer, longest (and widest) first; evaluations last."""
    matrix = sorted((i for i, j in enumerate(jobs) if j.matrix),
                    key=lambda i: (jobs[i].seed, -jobs[i].cards, -jobs[i].duration, i))
    evals = sorted((i for i, j in enumerate(jobs) if not j.matrix),
                   key=lambda i: (jobs[jobs[i].after].seed if jobs[i].after >= 0 else 0, i))
    return matrix + evals


def chained(jobs: Sequence[Job], lay: Sequence[int] | None = None) -> list[int]:
    """Seed layer by seed layer, each run followed at once by its evaluations, runs with
    their evaluations longest (and widest) first: a set's evaluations are placed as part of
    it, not in whatever room the other sets leave."""
    tails: dict[int, list[int]] = {}
    for i, j in enumerate(jobs):
        if j.after >= 0:
            tails.setdefault(j.after, []).append(i)

    def block(i: int) -> float:
        return jobs[i].duration + sum(jobs[e].duration for e in tails.get(i, ()))

    runs = sorted((i for i, j in enumerate(jobs) if j.matrix),
                  key=lambda i: (jobs[i].seed, -jobs[i].cards, -block(i), i))
    out = [x for i in runs for x in (i, *tails.get(i, ()))]
    seen = set(out)
    return out + [i for i in (layered(jobs) if lay is None else lay) if i not in seen]


def _smallest(jobs: Sequence[Job], idx: Iterable[int]) -> list[int]:
    return sorted(idx, key=lambda i: (jobs[i].duration * jobs[i].cards, jobs[i].duration, i))


def shortest_evals(jobs: Sequence[Job], lay: Sequence[int] | None = None) -> list[int]:
    """Seed layer by seed layer, then the evaluations shortest (and narrowest) first: where
    the window cannot take every evaluation, the most of them fit so."""
    matrix = [i for i in (layered(jobs) if lay is None else lay) if jobs[i].matrix]
    return matrix + _smallest(jobs, (i for i, j in enumerate(jobs) if not j.matrix))


def shortest_rest(jobs: Sequence[Job], k: int, lay: Sequence[int] | None = None
                  ) -> list[int]:
    """The first `k` seed layers as `layered` orders them, then the other matrix runs
    shortest first, then the evaluations shortest first: beyond the complete sets, the most
    runs, and the room they leave to the most evaluations."""
    keep = set(sorted({j.seed for j in jobs if j.matrix})[:k])
    head = [i for i in (layered(jobs) if lay is None else lay)
            if jobs[i].matrix and jobs[i].seed in keep]
    rest = _smallest(jobs, (i for i, j in enumerate(jobs) if j.matrix and j.seed not in keep))
    return head + rest + _smallest(jobs, (i for i, j in enumerate(jobs) if not j.matrix))


def sets_first(jobs: Sequence[Job], k: int, lay: Sequence[int] | None = None) -> list[int]:
    """The matrix runs of the first `k` seed layers longest (and widest) first, packed as
    one problem, then everything else seed layer by seed layer."""
    keep = set(sorted({j.seed for j in jobs if j.matrix})[:k])
    head = sorted((i for i, j in enumerate(jobs) if j.matrix and j.seed in keep),
                  key=lambda i: (-jobs[i].cards, -jobs[i].duration, i))
    rest = [i for i in (layered(jobs) if lay is None else lay)
            if not (jobs[i].matrix and jobs[i].seed in keep)]
    return head + rest


def _list_scheduler(jobs: Sequence[Job], n_cards: int, horizon: float
                    ) -> list[Placement | None]:
    """Today's list scheduler, in the given order (the floor the fast packer never goes
    below)."""
    return schedule([j.duration for j in jobs], [j.cards for j in jobs], n_cards, horizon,
                    [j.after for j in jobs])


def _counts_max(key: Key, best: tuple[int, int, int]) -> bool:
    return (key[0], key[1], key[2]) >= best


def pack_fast(jobs: Sequence[Job], n_cards: int, horizon: float) -> list[Placement | None]:
    """The best packing the fast packer finds for the objective."""
    if not jobs:
        return []
    ok = runnable(jobs, n_cards, horizon)
    # True upper bounds on each count: reaching them ends the search early.
    ceiling = (
        _sets_ceiling(jobs, ok, n_cards * horizon),
        min(sum(1 for j, r in zip(jobs, ok, strict=True) if r and j.matrix),
            capacity_bound(jobs, n_cards, horizon)),
        sum(1 for j, r in zip(jobs, ok, strict=True) if r and not j.matrix),
    )
    start = layered(jobs)
    first = serial(jobs, start, n_cards, horizon)
    if _counts_max(score(jobs, first), ceiling):
        return first  # every run that can run is placed: nothing to compare
    tried: list[tuple[list[Placement | None], list[int] | None]] = [
        (first, start),
        (serial(jobs, range(len(jobs)), n_cards, horizon), list(range(len(jobs))))]
    have = score(jobs, first)[0]
    for k in range(have + 1, min(ceiling[0], have + _SETS_TRIED) + 1):
        head = sets_first(jobs, k, start)
        tried.append((serial(jobs, head, n_cards, horizon), head))
    mores = [shortest_rest(jobs, have, start)]
    if ceiling[2]:
        mores.append(chained(jobs, start))
    if have < ceiling[0]:
        mores.append(shortest_rest(jobs, have + 1, start))
    for more in mores:
        tried.append((serial(jobs, more, n_cards, horizon), more))
    for starts in most_whole(jobs, n_cards, horizon, have, ceiling[0]):
        pins = sorted(starts, key=lambda i: (starts[i], i))
        around = [*pins, *(i for i in start if i not in starts)]
        tried.append((serial(jobs, around, n_cards, horizon, starts), around))
    tried.append((_list_scheduler(jobs, n_cards, horizon), None))
    floor = score(jobs, tried[-1][0])
    scored = [(score(jobs, p), -n, p, o) for n, (p, o) in enumerate(tried)]
    key, _, best, order = max((t for t in scored if _dominates(t[0], floor)),
                              key=lambda t: (t[0], t[1]))
    key, best = _top_up(jobs, key, best, n_cards, horizon, start)
    if _counts_max(key, ceiling):
        return best
    budget = min(_SEARCH_CAP, _SEARCH_WORK // len(jobs))
    if budget > 0:
        # The search starts from an order already placed above: its packing is reused.
        here, placed = (order, best) if order is not None else (start, first)
        for ckey, p, _o in _search(jobs, here, placed, n_cards, horizon, key, ceiling,
                                   budget):
            if ckey > key and _dominates(ckey, floor):
                key, best = _top_up(jobs, ckey, p, n_cards, horizon, start)
    return best


def _top_up(jobs: Sequence[Job], key: Key, placed: list[Placement | None], n_cards: int,
            horizon: float, lay: Sequence[int]) -> tuple[Key, list[Placement | None]]:
    """A local repair: every placed run kept where it is, the runs left out tried again in
    the room left, matrix runs first, then evaluations shortest first (the most of them
    fit so). The better of the two packings, with its key."""
    idle = n_cards * horizon - sum(j.duration * j.cards for j, p in zip(jobs, placed, strict=True)
                                   if p is not None)
    if not any(p is None and j.duration * j.cards <= idle + EPS_H
               for j, p in zip(jobs, placed, strict=True)):
        return key, placed  # no run left out fits in the idle card-hours
    at = {i: p.start for i, p in enumerate(placed) if p is not None}
    kept = sorted(at, key=lambda i: (at[i], i))
    left = [i for i in shortest_evals(jobs, lay) if i not in at]
    got = serial(jobs, [*kept, *left], n_cards, horizon, at)
    mine = score(jobs, got)
    return (mine, got) if mine > key else (key, placed)


def _dominates(key: Key, floor: Key) -> bool:
    """No worse than the list scheduler by the objective's counts: more complete seed sets
    may cost matrix runs (sets come first), but the fast packer never goes below today's."""
    return (key[0], key[1], key[2]) >= (floor[0], floor[1], floor[2])


def _sets_ceiling(jobs: Sequence[Job], ok: Sequence[bool], card_hours: float) -> int:
    """Complete seed sets no schedule exceeds: each set's runs must all be able to run, and
    the sets together must fit the window's card-hours."""
    layers: dict[int, tuple[bool, float]] = {}
    for j, r in zip(jobs, ok, strict=True):
        if j.matrix:
            fine, need = layers.get(j.seed, (True, 0.0))
            layers[j.seed] = (fine and r, need + (j.duration * j.cards if r else 0.0))
    sets, used = 0, 0.0
    for seed in sorted(layers):
        fine, need = layers[seed]
        used += need
        if not fine or used > card_hours + EPS_H * len(jobs):
            break
        sets += 1
    return sets


def _moves(order: list[int], u: int, lo: int, pos: int) -> Iterator[list[int]]:
    """Orders with `u` (at `pos`) moved ahead to each place from `lo`, then swapped with
    each run there: built one at a time, as the search budget allows."""
    for p in range(lo, pos):
        yield [*order[:p], u, *order[p:pos], *order[pos + 1:]]
    for p in range(lo, pos):
        swapped = list(order)
        swapped[p], swapped[pos] = u, order[p]
        yield swapped


def _search(jobs: Sequence[Job], order: list[int], placed: list[Placement | None],
            n_cards: int, horizon: float, key: Key, ceiling: tuple[int, int, int], budget: int
            ) -> list[tuple[Key, list[Placement | None], list[int]]]:
    """First-improvement local search over the order, from `order` and its packing
    `placed`: each run left out is moved ahead of every other run, or swapped with one,
    while the objective improves."""
    found: list[tuple[Key, list[Placement | None], list[int]]] = []
    improved = True
    while improved and budget > 0 and not _counts_max(key, ceiling):
        improved = False
        left = [i for i in order if placed[i] is None and (
            jobs[i].after < 0 or placed[jobs[i].after] is not None)]
        for u in left:
            pos = order.index(u)
            lo = order.index(jobs[u].after) + 1 if jobs[u].after >= 0 else 0
            for cand in _moves(order, u, lo, pos):
                if budget <= 0:
                    return found
                budget -= 1
                got = serial(jobs, cand, n_cards, horizon)
                ckey = score(jobs, got)
                if ckey > key:
                    key, order, placed = ckey, cand, got
                    found.append((key, got, cand))
                    improved = True
                    break
            if improved:
                break
    return found

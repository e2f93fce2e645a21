"""Packing what is left of a campaign into the rest of its window.

The runs left are packed with the plan's own packer and objective (complete seed sets
first, `planner.packing.pack.pack`) on every card, each from the hour it frees. While
runs still run, three packings are made and the best under that objective is kept:

- the packer on the cards free now, the runs it leaves out then going onto the earliest
  card that frees (or the idle end of any card) where they end inside the window;
- the same runs in the same order, each onto whichever cards free first, busy or not, so
  that a queue on the one card free now spreads over cards that free soon after;
- the packer on every card once the last running run ends: what a plan made from scratch
  then would do, so a replan is never worse than waiting for every card.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.packing.pack import EPS_H, Job, pack, score
from planner.packing.schedule import Placement, card_free_times


@dataclass(frozen=True)
class Left:
    """A run still to place."""

    hours: float
    """Its duration at the observed pace."""
    cards: int
    """Cards it needs at once."""
    seed: int
    """Its seed layer (-1 for an evaluation)."""
    after: int = -1
    """Index, among the runs left, of the run it must follow (-1: none)."""
    ready: float = 0.0
    """Hour, from now, before which it may not start (the running run it follows)."""


def pack_rest(left: Sequence[Left], busy_until: Sequence[float], horizon: float
              ) -> list[Placement | None]:
    """Placements, in hours from now and card slots, of `left` on cards that each free up at
    `busy_until[c]` (0: free now), inside `horizon` hours: the best of the packings above."""
    first = _free_now_first(left, busy_until, horizon)
    if not left or all(t <= EPS_H for t in busy_until):
        return first
    jobs = [Job(lf.hours, lf.cards, lf.seed, lf.after) for lf in left]
    placed = sorted((i for i, p in enumerate(first) if p is not None),
                    key=lambda i: (first[i].start, i))  # type: ignore[union-attr]
    spread = _fill(left, [None] * len(left), [max(t, 0.0) for t in busy_until],
                   [*placed, *_unplaced(left, first)], horizon)
    candidates = [first, spread, _after_all(left, busy_until, horizon)]
    # The first best wins a tie: the packer's own placing on the cards free now.
    return max(candidates, key=lambda p: score(jobs, p))


def _unplaced(left: Sequence[Left], out: Sequence[Placement | None]) -> list[int]:
    """The runs `out` leaves out, seed layer by seed layer, evaluations last."""
    return sorted((i for i, p in enumerate(out) if p is None),
                  key=lambda i: (left[i].seed < 0, left[i].seed, i))


def _free_now_first(left: Sequence[Left], busy_until: Sequence[float], horizon: float
                    ) -> list[Placement | None]:
    """The packer on the cards free now; what it leaves out onto cards as they free."""
    free_now = [c for c, t in enumerate(busy_until) if t <= EPS_H]
    out: list[Placement | None] = [None] * len(left)
    # An evaluation of a still-running run waits for it: the packer sees it as free-standing,
    # so it goes to the second pass, which knows the hour it may start.
    direct = [i for i, lf in enumerate(left) if lf.ready <= EPS_H
              and (lf.after < 0 or left[lf.after].ready <= EPS_H)]
    index = {i: n for n, i in enumerate(direct)}
    if free_now and direct and horizon > 0:
        jobs = [Job(left[i].hours, left[i].cards, left[i].seed,
                    index.get(left[i].after, -1)) for i in direct]
        placed = pack(jobs, len(free_now), horizon).placements
        for i, p in zip(direct, placed, strict=True):
            if p is not None:
                out[i] = Placement(p.start, p.end, tuple(sorted(free_now[c] for c in p.cards)))
    free = [max(t, 0.0) for t in busy_until]
    for c, t in enumerate(card_free_times(out, len(busy_until))):
        free[c] = max(free[c], t)
    return _fill(left, out, free, _unplaced(left, out), horizon)


def _after_all(left: Sequence[Left], busy_until: Sequence[float], horizon: float
               ) -> list[Placement | None]:
    """The packer on every card from the hour the last of them frees; what it leaves out
    onto cards as they free."""
    at = max(max(busy_until, default=0.0), 0.0)
    out: list[Placement | None] = [None] * len(left)
    free = [max(t, 0.0) for t in busy_until]
    if horizon - at > EPS_H:
        free = [at] * len(busy_until)
        # Every run may start by then: a running run's evaluation waits for no more.
        jobs = [Job(lf.hours, lf.cards, lf.seed, lf.after) for lf in left]
        for i, p in enumerate(pack(jobs, len(busy_until), horizon - at).placements):
            if p is not None:
                out[i] = Placement(at + p.start, at + p.end, p.cards)
    for c, t in enumerate(card_free_times(out, len(busy_until))):
        free[c] = max(free[c], t)
    return _fill(left, out, free, _unplaced(left, out), horizon)


def _fill(left: Sequence[Left], out: list[Placement | None], free: list[float],
          order: Sequence[int], horizon: float) -> list[Placement | None]:
    """`out` with the runs of `order` placed in turn, each onto the cards that free first
    (`free[c]`: the hour card c frees) where it ends inside `horizon`; an evaluation only
    after its run. A run whose run to follow comes later in `order` waits for it."""
    waiting: dict[int, list[int]] = {}
    queue = list(reversed(order))
    listed = set(order)
    seen: set[int] = set()
    while queue:
        i = queue.pop()
        if i in seen:
            continue
        lf = left[i]
        if lf.after >= 0 and lf.after not in seen and out[lf.after] is None \
                and lf.after in listed:
            waiting.setdefault(lf.after, []).append(i)
            continue
        seen.add(i)
        queue.extend(reversed(waiting.pop(i, [])))
        ready = lf.ready
        if lf.after >= 0:
            before = out[lf.after]
            if before is None:
                continue
            ready = max(ready, before.end)
        if lf.cards > len(free):
            continue
        cards = sorted(range(len(free)), key=lambda c: (free[c], c))[:lf.cards]
        start = max(ready, *(free[c] for c in cards))
        end = start + lf.hours
        if end > horizon + EPS_H:
            continue
        for c in cards:
            free[c] = end
        out[i] = Placement(start, end, tuple(sorted(cards)))
    return out

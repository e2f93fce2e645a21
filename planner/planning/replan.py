"""Packing what is left of a campaign into the rest of its window.

The runs left are packed with the plan's own packer and objective (complete seed sets
first, `planner.planning.packing.pack`) on the cards free now, from now on. Cards held by a
running run join once it ends: a run the packing leaves out still goes onto the earliest
such card (or the idle end of any card) where it ends inside the window.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner.planning.packing import EPS_H, Job, pack
from planner.planning.schedule import Placement, card_free_times


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
    `busy_until[c]` (0: free now), inside `horizon` hours."""
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
    order = sorted((i for i, p in enumerate(out) if p is None),
                   key=lambda i: (left[i].seed < 0, left[i].seed, i))
    for i in order:
        lf = left[i]
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

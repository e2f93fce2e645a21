"""Placing runs onto cards: a small, pure list scheduler on plain numbers.

Runs are taken in the order given and each goes onto the cards that free up earliest. A
run that cannot end inside the horizon is left out, and a later, shorter run may still take
the idle tail it leaves. This is what the executor does with a plan's runs, so `status`
projects the work left with it; plans are packed by `planner.packing.pack`, which is never worse
than this scheduler on the same runs.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import NamedTuple

EPS_H = 1e-6
"""Tolerance on times, in hours (3.6 ms): a run ending this close after the horizon fits."""


class Placement(NamedTuple):
    """Where and when one run goes: its start, end, and the card indices it holds."""

    start: float
    end: float
    cards: tuple[int, ...]


def schedule(
    durations: Sequence[float],
    cards_needed: Sequence[int],
    n_cards: int,
    horizon: float,
    after: Sequence[int] | None = None,
    earliest: list[float] | None = None,
) -> list[Placement | None]:
    """Place runs in order; `None` for a run that cannot end by `horizon`.

    `after[i]` is the index of a run that must finish before run `i` starts (-1 for none);
    a run whose predecessor was left out is left out too. When `earliest` is given, it
    receives each run's earliest possible start (inf where it has none), which explains
    why a run was left out.
    """
    # Heap of (free_at, card): popping k gives the k cards that free up first, lowest index
    # first on ties, which keeps placements deterministic.
    free: list[tuple[float, int]] = [(0.0, c) for c in range(n_cards)]
    if after is None and earliest is None and n_cards > 0 \
            and len(cards_needed) == len(durations) and all(map((1).__eq__, cards_needed)):
        return _one_card_each(durations, free, horizon + EPS_H)
    out: list[Placement | None] = []
    pop, push = heapq.heappop, heapq.heappush
    for i, duration in enumerate(durations):
        k = cards_needed[i]
        ready = 0.0
        if after is not None and after[i] >= 0:
            before = out[after[i]]
            if before is None:
                out.append(None)
                if earliest is not None:
                    earliest.append(float("inf"))
                continue
            ready = before.end
        if k == 1:
            at, card = free[0]
            start = at if at > ready else ready
            end = start + duration
            if earliest is not None:
                earliest.append(start)
            if k > n_cards or end > horizon + EPS_H:
                out.append(None)
                continue
            heapq.heapreplace(free, (end, card))
            out.append(Placement(start, end, (card,)))
            continue
        if k > n_cards:
            out.append(None)
            if earliest is not None:
                earliest.append(float("inf"))
            continue
        taken = [pop(free) for _ in range(k)]
        start = max(taken[-1][0], ready)
        end = start + duration
        if earliest is not None:
            earliest.append(start)
        if end > horizon + EPS_H:
            for item in taken:
                push(free, item)
            out.append(None)
            continue
        for _, card in taken:
            push(free, (end, card))
        out.append(Placement(start, end, tuple(sorted(c for _, c in taken))))
    return out


def _one_card_each(durations: Sequence[float], free: list[tuple[float, int]], limit: float
                   ) -> list[Placement | None]:
    """`schedule` where every run takes one card and none waits on another (most plans,
    a hundred thousand runs at most): the same placements, in a loop of its own."""
    out: list[Placement | None] = []
    add, replace, new = out.append, heapq.heapreplace, tuple.__new__
    for duration in durations:
        at, card = free[0]
        start = at if at > 0.0 else 0.0
        end = start + duration
        if end > limit:
            add(None)
        else:
            replace(free, (end, card))
            add(new(Placement, (start, end, (card,))))  # Placement's own, without its call
    return out


def card_free_times(placements: Sequence[Placement | None], n_cards: int) -> list[float]:
    """When each card is last free, after all placements."""
    free = [0.0] * n_cards
    for p in placements:
        if p is not None:
            for c in p.cards:
                free[c] = max(free[c], p.end)
    return free

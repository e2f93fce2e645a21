"""Proofs that a set of runs cannot all fit, by counting alone (no solver).

Each bound relaxes the schedule to its cards' loads: a run on `k` cards becomes `k` pieces
of its duration, one on each of `k` different cards, and each card's pieces must sum to no
more than the window (plus the tolerance `EPS_H`). Precedence is dropped. Whatever no
assignment of pieces to cards can hold, no schedule holds either, so a `False` here is a
proof for the real durations, never for rounded ones.

- **card-hours**: the pieces together exceed the cards' hours;
- **count**: a card holds at most as many pieces as the shortest pieces that fit in the
  window, so there are at most that many pieces per card;
- **bins** (Martello and Toth's L2 bound for bin packing): for each threshold `a`, the
  pieces longer than half the window need a card each, and those of `a` or more that
  cannot share a card with the longest ones need the room left after them.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from planner.packing.objective import EPS_H, Job

# Float noise allowed on sums of hour figures: it may only weaken a bound, never
# strengthen it past the truth.
_NOISE = 1e-9


def pieces(jobs: Sequence[Job]) -> list[float]:
    """Per-card durations of `jobs`, longest first."""
    return sorted((j.duration for j in jobs for _ in range(j.cards)), reverse=True)


def cards_needed(jobs: Sequence[Job], horizon: float) -> int:
    """A lower bound on the cards that any schedule placing every one of `jobs` inside
    [0, horizon] needs (a very large number when one of them cannot run at all)."""
    cap = horizon + EPS_H + _NOISE
    widest = max((j.cards for j in jobs), default=0)
    if any(not math.isfinite(j.duration) or j.duration > cap for j in jobs):
        return 1 << 30
    for j in jobs:
        if j.after >= 0 and jobs[j.after].duration + j.duration > cap:
            return 1 << 30
    items = pieces(jobs)
    if not items:
        return 0
    best = max(widest, math.ceil(sum(items) / cap - 1e-9))
    smallest = sorted(items)
    per_card, acc = 0, 0.0
    for d in smallest:
        acc += d
        if acc > cap + _NOISE * (per_card + 1):
            break
        per_card += 1
    if per_card:
        best = max(best, math.ceil(len(items) / per_card))
    return max(best, _l2(items, cap))


def _l2(items: list[float], cap: float) -> int:
    """Martello and Toth's L2 lower bound on bins of size `cap` for `items`."""
    asc = sorted(items)
    pre = [0.0]
    for d in asc:
        pre.append(pre[-1] + d)
    half = cap / 2
    n = len(asc)
    top_half = bisect.bisect_right(asc, half)  # pieces no longer than half the window
    best = 0
    # Thresholds worth trying: 0 and every piece no longer than half the window.
    for a in {0.0, *asc[:top_half]}:
        lo = bisect.bisect_left(asc, a)
        cut = bisect.bisect_right(asc, cap - a)  # pieces longer than cap - a: from here
        big = n - cut
        mid_n = max(0, cut - top_half)
        mid_sum = pre[cut] - pre[top_half] if cut > top_half else 0.0
        small = pre[top_half] - pre[lo] if top_half > lo else 0.0
        room = mid_n * cap - mid_sum
        extra = max(0, math.ceil((small - room) / cap - 1e-9))
        best = max(best, big + mid_n + extra)
    return best


def cannot_fit(jobs: Sequence[Job], n_cards: int, horizon: float) -> bool:
    """Whether counting alone proves that `jobs` cannot all run in [0, horizon] on
    `n_cards` cards."""
    return cards_needed(jobs, horizon) > n_cards

"""A bin-packing bound on how many copies of a set of runs fit on a window's tracks.

A schedule of runs of one width is a set of tracks, each a sequence of runs inside the
window (`planner.packing.capacity`), so fitting runs is at least as hard as packing their
durations into `tracks` bins of the window's length. Martello and Toth's bound L2 counts
the bins any packing needs: for each α ≤ capacity ÷ 2, the runs longer than capacity − α
(J1) and those longer than half (J2) each need a bin of their own, and the runs from α to
half (J3) need bins for what the room left beside J2 cannot hold:

    L2(α) = |J1| + |J2| + max(0, ⌈(Σ J3 − (|J2| × capacity − Σ J2)) ÷ capacity⌉)

Precedence (an evaluation after its run) is left out, which only loosens the bound.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

_ALPHAS = 64
"""Most values of α tried (the distinct short durations, evenly picked)."""


def _parts(durations: Sequence[float], capacity: float, alpha: float
           ) -> tuple[int, int, float, float]:
    """(|J1|, |J2|, Σ J2, Σ J3) of `durations` for this α."""
    n1 = n2 = 0
    s2 = s3 = 0.0
    half = capacity / 2
    for d in durations:
        if d > capacity - alpha:
            n1 += 1
        elif d > half:
            n2 += 1
            s2 += d
        elif d >= alpha:
            s3 += d
    return n1, n2, s2, s3


def most_copies(base: Sequence[float], unit: Sequence[float], tracks: int, capacity: float,
                start: int) -> int:
    """Largest k ≤ `start` for which `base` and k copies of `unit` may fit `tracks` bins of
    `capacity` by L2: no packing fits more. For each α the bins L2 asks for grow with k
    (they are |J1| + max(|J2|, ⌈(Σ J2 + Σ J3) ÷ capacity⌉) once the integer |J2| × capacity
    is taken out of the ceiling), so the largest k is found by halving."""
    half = capacity / 2
    short = sorted({d for d in (*base, *unit) if d <= half})
    if len(short) > _ALPHAS:
        short = [short[i * len(short) // _ALPHAS] for i in range(_ALPHAS)]
    alphas = [0.0, *short]
    parts = [(_parts(base, capacity, a), _parts(unit, capacity, a)) for a in alphas]

    def passes(k: int) -> bool:
        for (b1, b2, bs2, bs3), (u1, u2, us2, us3) in parts:
            n2 = b2 + k * u2
            rest = (bs3 + k * us3) - (n2 * capacity - (bs2 + k * us2))
            need = b1 + k * u1 + n2 + max(0, math.ceil(rest / capacity - 1e-9))
            if need > tracks:
                return False
        return True

    lo, hi = 0, start
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if passes(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo

"""Runs on one card each as bin packing: whether pieces of given lengths fit on the cards,
each card's pieces back to back within the window.

A campaign's runs come in few distinct lengths (a configuration lasts as long in every
seed), so the question is asked by kind, in CP-SAT (imported only here): either over the
card patterns (how many of each kind one card holds; how many cards take each pattern),
which has no symmetry between cards and the strong bound of the configuration linear
program, or, when there are too many patterns to list, over each card's count of each
kind, cards in falling order of load. Lengths are whole grid units
(`planner.planning.packing_model`): rounded up for a packing to build on, rounded down
for a proof that nothing fits.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Sequence
from typing import Any

PATTERN_LIMIT = 5_000
"""Most card patterns listed; beyond it, the per-card model."""


def _patterns(kinds: list[int], cap: int, limit: int) -> list[tuple[int, ...]] | None:
    """Every maximal pattern (pieces of each kind, longest kind first, that fit in `cap` and
    leave no room for one more piece), or None when there are more than `limit` or listing
    them takes longer than that many times over."""
    out: list[tuple[int, ...]] = []
    shortest = kinds[-1]
    counts = [0] * len(kinds)
    work = [limit * 20]

    def go(k: int, room: int) -> bool:
        work[0] -= 1
        if work[0] < 0 or len(out) > limit:
            return False
        if k == len(kinds):
            if room < shortest:
                out.append(tuple(counts))
            return True
        for n in range(room // kinds[k], -1, -1):
            counts[k] = n
            if not go(k + 1, room - n * kinds[k]):
                return False
        counts[k] = 0
        return True

    return out if go(0, cap) else None


def fit_loads(lengths: Sequence[int], n_cards: int, cap: int, seconds: float,
              n_workers: int = 1) -> tuple[bool | None, list[list[int]] | None]:
    """Whether pieces of `lengths` fit on `n_cards` cards of `cap` units each: True with,
    per card, the indices of its pieces; False when proven impossible; None when unknown
    within `seconds`."""
    from ortools.sat.python import cp_model

    if any(d > cap for d in lengths):
        return False, None
    demand = Counter(d for d in lengths if d > 0)
    kinds = sorted(demand, reverse=True)
    if not kinds:
        return True, [list(range(len(lengths)))] + [[] for _ in range(n_cards - 1)]
    m = cp_model.CpModel()
    patterns = _patterns(kinds, cap, PATTERN_LIMIT)
    per_card: list[list[Any]]
    if patterns is not None:
        use = [m.new_int_var(0, n_cards, f"p{i}") for i in range(len(patterns))]
        m.add(sum(use) <= n_cards)
        for t, d in enumerate(kinds):
            m.add(sum(p[t] * u for p, u in zip(patterns, use, strict=True)) >= demand[d])
    else:
        per_card = [[m.new_int_var(0, min(demand[d], cap // d), f"y{c}_{t}")
                     for t, d in enumerate(kinds)] for c in range(n_cards)]
        loads = []
        for row in per_card:
            load = sum(d * y for d, y in zip(kinds, row, strict=True))
            m.add(load <= cap)
            loads.append(load)
        for t, d in enumerate(kinds):
            m.add(sum(row[t] for row in per_card) == demand[d])
        for a, b in itertools.pairwise(loads):
            m.add(a >= b)
    solver = cp_model.CpSolver()
    solver.parameters.num_workers = n_workers
    solver.parameters.max_time_in_seconds = max(seconds, 0.01)
    solver.parameters.max_deterministic_time = max(seconds, 0.01)
    status = solver.solve(m)
    if status == cp_model.INFEASIBLE:
        return False, None
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return None, None
    if patterns is not None:
        rows = [p for p, u in zip(patterns, use, strict=True) for _ in range(solver.value(u))]
    else:
        rows = [tuple(solver.value(y) for y in row) for row in per_card]
    return True, _deal(lengths, kinds, rows, n_cards)


def _deal(lengths: Sequence[int], kinds: list[int], rows: Sequence[Sequence[int]],
          n_cards: int) -> list[list[int]]:
    """Pieces dealt to cards by the kinds counted for each card (a pattern may hold more of
    a kind than are left: the surplus stays empty)."""
    left: dict[int, list[int]] = {}
    for i, d in enumerate(lengths):
        left.setdefault(d, []).append(i)
    cards: list[list[int]] = [[] for _ in range(n_cards)]
    cards[0].extend(left.pop(0, []))
    for c, row in enumerate(rows):
        for t, n in enumerate(row):
            pool = left.get(kinds[t], [])
            cards[c].extend(pool[:n])
            del pool[:n]
    assert not any(left.values()), "a piece was not dealt"
    return cards

"""Runs on one card each as bin packing: whether pieces of given lengths fit on the cards,
each card's pieces back to back within the window.

A campaign's runs come in few distinct lengths (a configuration lasts as long in every
seed), so the question is asked by kind: first by an exact depth-first search over each
card's pattern (how many of each kind it holds), when the kinds and counts are few; then in
CP-SAT (imported only here), either over the card patterns (how many cards take each),
which has no symmetry between cards and the strong bound of the configuration linear
program, or, when there are too many patterns to list, over each card's count of each
kind, cards in falling order of load. Lengths are whole grid units
(`planner.packing.model`): rounded up for a packing to build on, rounded down
for a proof that nothing fits.
"""

from __future__ import annotations

import itertools
import math
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

from planner.packing.model import deterministic

PATTERN_LIMIT = 5_000
"""Most card patterns listed; beyond it, the per-card model."""
STATE_LIMIT = 200_000
"""Most states (pieces left of each kind) for the exact search before CP-SAT."""


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


def _search(kinds: list[int], need: tuple[int, ...], patterns: list[tuple[int, ...]],
            n_cards: int, cap: int, deadline: float) -> list[tuple[int, ...]] | bool | None:
    """Depth-first over one card's pattern at a time, remembering what cannot be done:
    the patterns of a packing on at most `n_cards` cards, False when none exists, None
    when the deadline comes first. Exact and deterministic; for few kinds of few pieces."""
    failed: set[tuple[tuple[int, ...], int]] = set()
    steps = [0]
    # Most load first: a full card first finds a packing soonest.
    ordered = sorted(patterns, key=lambda p: -sum(n * d for n, d in zip(p, kinds, strict=True)))

    def go(left: tuple[int, ...], cards: int) -> list[tuple[int, ...]] | bool | None:
        load = sum(n * d for n, d in zip(left, kinds, strict=True))
        if load == 0:
            return []
        if load > cards * cap or (left, cards) in failed:
            return False
        steps[0] += 1
        if steps[0] % 256 == 0 and time.monotonic() > deadline:
            return None
        tried: set[tuple[int, ...]] = set()
        for p in ordered:
            take = tuple(min(a, b) for a, b in zip(p, left, strict=True))
            if take in tried or not any(take):
                continue
            tried.add(take)
            rest = go(tuple(a - b for a, b in zip(left, take, strict=True)), cards - 1)
            if rest is None:
                return None
            if isinstance(rest, list):
                return [take, *rest]
        failed.add((left, cards))
        return False

    return go(need, n_cards)


def fit_loads(lengths: Sequence[int], n_cards: int, cap: int, deadline: float,
              n_workers: int = 1, *, use_solver: bool = True
              ) -> tuple[bool | None, list[list[int]] | None]:
    """Whether pieces of `lengths` fit on `n_cards` cards of `cap` units each: True with,
    per card, the indices of its pieces; False when proven impossible; None when unknown
    by `deadline` (`time.monotonic()` seconds). `use_solver=False`: the exact search only,
    never CP-SAT."""
    if any(d > cap for d in lengths):
        return False, None
    demand = Counter(d for d in lengths if d > 0)
    kinds = sorted(demand, reverse=True)
    if not kinds:
        return True, [list(range(len(lengths)))] + [[] for _ in range(n_cards - 1)]
    patterns = _patterns(kinds, cap, PATTERN_LIMIT)
    states = math.prod(n + 1 for n in demand.values())
    if patterns is not None and (states <= STATE_LIMIT or not use_solver):
        got = _search(kinds, tuple(demand[d] for d in kinds), patterns, n_cards, cap,
                      (time.monotonic() + deadline) / 2 if use_solver else deadline)
        if got is False:
            return False, None
        if isinstance(got, list):
            return True, _deal(lengths, kinds, got, n_cards)
    if not use_solver:
        return None, None
    from ortools.sat.python import cp_model

    m = cp_model.CpModel()
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
    deterministic(solver, n_workers)
    seconds = max(deadline - time.monotonic(), 0.01)
    solver.parameters.max_time_in_seconds = seconds
    solver.parameters.max_deterministic_time = seconds
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

"""Scheduler: hand cases and invariants under hypothesis."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st

from planner.packing.schedule import Placement, card_free_times, schedule

EPS = 1e-9


def test_hand_case() -> None:
    out = schedule([10, 10, 10, 4], [1, 1, 1, 1], 2, 15)
    assert out[0] == Placement(0, 10, (0,))
    assert out[1] == Placement(0, 10, (1,))
    assert out[2] is None, "would end at 20 > 15"
    assert out[3] == Placement(10, 14, (0,)), "a later, shorter run takes the idle tail"


def test_multi_card_run_waits_for_enough_cards() -> None:
    out = schedule([5, 3, 4], [1, 1, 2], 2, 20)
    assert out[2] == Placement(5, 9, (0, 1))


def test_dependency_waits_and_follows_its_predecessor_out() -> None:
    out = schedule([5, 100, 1, 1], [1, 1, 1, 1], 2, 10, after=[-1, -1, 0, 1])
    assert out[1] is None
    assert out[2] is not None and out[2].start >= 5
    assert out[3] is None


@st.composite
def workloads(draw: st.DrawFn) -> tuple[list[float], list[int], int, float, list[int]]:
    n_cards = draw(st.integers(1, 6))
    n = draw(st.integers(0, 40))
    durations = draw(st.lists(st.floats(0.01, 50, allow_nan=False), min_size=n, max_size=n))
    needed = draw(st.lists(st.integers(1, n_cards + 1), min_size=n, max_size=n))
    after = [draw(st.integers(-1, i - 1)) if i and draw(st.booleans()) else -1 for i in range(n)]
    horizon = draw(st.floats(1, 120))
    return durations, needed, n_cards, horizon, after


@settings(max_examples=300, deadline=None)
@given(workloads())
def test_invariants(w: tuple[list[float], list[int], int, float, list[int]]) -> None:
    durations, needed, n_cards, horizon, after = w
    out = schedule(durations, needed, n_cards, horizon, after)
    assert len(out) == len(durations)
    per_card: dict[int, list[tuple[float, float]]] = {}
    for i, p in enumerate(out):
        if p is None:
            continue
        assert len(p.cards) == needed[i] == len(set(p.cards))
        assert p.end <= horizon + EPS, "every scheduled run ends inside the usable window"
        assert p.end - p.start == durations[i] or abs(p.end - p.start - durations[i]) < 1e-6
        if after[i] >= 0:
            before = out[after[i]]
            assert before is not None and p.start >= before.end - EPS
        for c in p.cards:
            per_card.setdefault(c, []).append((p.start, p.end))
    for spans in per_card.values():
        spans.sort()
        for (_, e1), (s2, _) in itertools.pairwise(spans):
            assert s2 >= e1 - EPS, "no two runs overlap on a card"
    free = sorted(card_free_times(out, n_cards))
    for i, p in enumerate(out):
        if p is not None:
            continue
        if needed[i] > n_cards:
            continue
        ready = 0.0
        if after[i] >= 0:
            before = out[after[i]]
            if before is None:
                continue
            ready = before.end
        start = max(free[needed[i] - 1], ready)
        assert start + durations[i] > horizon - EPS, (
            "no unscheduled run fits in the idle tail of enough cards")


def test_a_run_ending_at_the_horizon_fits() -> None:
    # 3 × 1.1 h sums to 3.3000000000000003 in floating point: still inside 3.3 h.
    out = schedule([1.1, 1.1, 1.1], [1, 1, 1], 1, 3.3)
    assert all(p is not None for p in out)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.floats(0, 50, allow_nan=False) | st.sampled_from([0.0, 1.0, 2.5]),
                max_size=40),
       st.integers(1, 5), st.floats(0, 120, allow_nan=False) | st.just(float("inf")))
def test_runs_of_one_card_each_go_where_the_general_loop_puts_them(
        durations: list[float], n_cards: int, horizon: float) -> None:
    # Asking for the earliest starts takes the general loop; without, one card each takes
    # its own.
    needs = [1] * len(durations)
    assert schedule(durations, needs, n_cards, horizon) == \
        schedule(durations, needs, n_cards, horizon, earliest=[])

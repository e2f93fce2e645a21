"""A replan packs what is left onto every card, each from the hour it frees: never worse,
under the packer's own objective, than the packer on the same remaining work once every
card is free, and always a valid schedule (no card holds two runs at once, none starts
before its card frees, its start hour or the run it evaluates)."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.packing.pack import EPS_H, Job, pack, score
from planner.packing.schedule import Placement
from planner.planning.replan import Left, pack_rest


@st.composite
def remaining(draw: st.DrawFn) -> tuple[list[Left], list[float], float]:
    """Runs left (some evaluations, of a run left or of a running one), the hour each card
    frees (0: free now) and the rest of the window."""
    n = draw(st.integers(1, 4))
    busy = draw(st.lists(st.sampled_from([0.0, 0.0, 0.05, 0.5, 1.0, 2.5]), min_size=n,
                         max_size=n))
    left: list[Left] = []
    for _ in range(draw(st.integers(1, 8))):
        hours = draw(st.sampled_from([0.1, 0.25, 0.5, 1.0, 1.5, 3.0]))
        cards = draw(st.integers(1, min(n, 2)))
        matrix = [i for i, lf in enumerate(left) if lf.seed >= 0]
        kind = draw(st.sampled_from(["train", "train", "eval-left", "eval-running"]))
        if kind == "eval-left" and matrix:
            left.append(Left(hours, cards, -1, draw(st.sampled_from(matrix))))
        elif kind == "eval-running":
            left.append(Left(hours, cards, -1, -1, draw(st.sampled_from(busy))))
        else:
            left.append(Left(hours, cards, draw(st.integers(0, 2))))
    horizon = draw(st.sampled_from([0.5, 1.0, 2.0, 4.0, 8.0, 20.0]))
    return left, busy, horizon


def jobs_of(left: Sequence[Left]) -> list[Job]:
    return [Job(lf.hours, lf.cards, lf.seed, lf.after) for lf in left]


def check_valid(left: Sequence[Left], busy: Sequence[float], horizon: float,
                out: Sequence[Placement | None]) -> None:
    per_card: dict[int, list[tuple[float, float]]] = {}
    for lf, p in zip(left, out, strict=True):
        if p is None:
            continue
        assert len(p.cards) == lf.cards == len(set(p.cards))
        assert all(0 <= c < len(busy) for c in p.cards)
        assert abs(p.end - p.start - lf.hours) < 1e-9 and p.end <= horizon + EPS_H
        assert p.start >= lf.ready - EPS_H
        assert all(p.start >= busy[c] - EPS_H for c in p.cards)
        if lf.after >= 0:
            parent = out[lf.after]
            assert parent is not None and p.start >= parent.end - EPS_H
        for c in p.cards:
            per_card.setdefault(c, []).append((p.start, p.end))
    for spans in per_card.values():
        spans.sort()
        assert all(a[1] <= b[0] + EPS_H for a, b in itertools.pairwise(spans))


def once_every_card_is_free(left: Sequence[Left], busy: Sequence[float], horizon: float
                            ) -> list[Placement | None]:
    """The packer on the same work, started once the last running run has ended."""
    at = max(busy)
    if horizon - at <= EPS_H:
        return [None] * len(left)
    placed = pack(jobs_of(left), len(busy), horizon - at).placements
    return [None if p is None else Placement(at + p.start, at + p.end, p.cards)
            for p in placed]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=remaining())
def test_never_worse_than_the_packer_once_every_card_is_free(
        case: tuple[list[Left], list[float], float]) -> None:
    left, busy, horizon = case
    out = pack_rest(left, busy, horizon)
    check_valid(left, busy, horizon, out)
    jobs = jobs_of(left)
    assert score(jobs, out) >= score(jobs, once_every_card_is_free(left, busy, horizon))


@settings(max_examples=60, deadline=None)
@given(case=remaining())
def test_with_every_card_free_it_is_the_packer(
        case: tuple[list[Left], list[float], float]) -> None:
    left, busy, horizon = case
    left = [replace(lf, ready=0.0) for lf in left]
    free = [0.0] * len(busy)
    out = pack_rest(left, free, horizon)
    check_valid(left, free, horizon, out)
    assert score(jobs_of(left), out) >= score(jobs_of(left), pack(jobs_of(left), len(free),
                                                                  horizon).placements)


def test_a_queue_on_the_one_free_card_spreads_over_cards_that_free_soon() -> None:
    """The case found: two cards still busy for a few minutes, one free; six half-hour
    runs went one after another onto the free card. Every card takes some now."""
    left = [Left(0.5, 1, seed) for seed in (0, 0, 1, 1, 2, 2)]
    busy = [0.0, 0.05, 0.05]
    out = pack_rest(left, busy, 8.0)
    check_valid(left, busy, 8.0, out)
    assert all(p is not None for p in out)
    assert {c for p in out if p is not None for c in p.cards} == {0, 1, 2}
    assert max(p.end for p in out if p is not None) <= 0.05 + 1.0 + EPS_H

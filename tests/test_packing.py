"""The packers against a brute-force optimum, the list scheduler, and their invariants."""

from __future__ import annotations

import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.packing.fast import pack_fast, serial
from planner.packing.pack import Job, capacity_bound, counts, pack, score
from planner.packing.schedule import schedule
from tests.packing_oracle import check, instance, optimum

FAMILIES = [dict(wide=False, evals=False), dict(wide=True, evals=False),
            dict(wide=True, evals=True), dict(wide=True, evals=True, tight=True)]
SETTINGS = settings(max_examples=60, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _list(jobs: list[Job], n: int, h: float) -> list:
    return schedule([j.duration for j in jobs], [j.cards for j in jobs], n, h,
                    [j.after for j in jobs])


@pytest.mark.parametrize("family", FAMILIES)
@SETTINGS
@given(rng=st.randoms(use_true_random=False))
def test_fast_never_below_the_list_scheduler(family: dict, rng: random.Random) -> None:
    jobs, n, h = instance(rng, **family)
    fast = pack_fast(jobs, n, h)
    check(jobs, n, h, fast)
    got, old = score(jobs, fast), score(jobs, _list(jobs, n, h))
    # Sets come first: more complete sets may cost a matrix run, never the reverse.
    assert counts(got) >= counts(old), "worse than the list scheduler by the objective"
    assert got[1] <= capacity_bound(jobs, n, h)


@pytest.mark.parametrize("family", FAMILIES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rng=st.randoms(use_true_random=False))
def test_cp_sat_finds_the_optimum(family: dict, rng: random.Random) -> None:
    pytest.importorskip("ortools")
    jobs, n, h = instance(rng, **family)
    best = optimum(jobs, n, h)
    got = pack(jobs, n, h, solver="cp-sat", time_limit_s=5.0, exact_times=True)
    check(jobs, n, h, got.placements)
    key = score(jobs, got.placements)
    assert got.optimal is True
    assert counts(key) == counts(best)
    assert key[3] == pytest.approx(best[3], abs=1e-3)
    assert key[4] == pytest.approx(best[4], abs=1e-3)
    assert key[1] <= got.matrix_bound <= capacity_bound(jobs, n, h)


def test_two_cards_pair_long_with_short() -> None:
    # 13+5 and 10+8 complete seed 0 at hour 18 of 20; in preset order it never completes.
    jobs = [Job(d, 1, s) for s in range(2) for d in (13.0, 5.0, 10.0, 8.0)]
    assert score(jobs, _list(jobs, 2, 20.0))[0] == 0
    got = pack(jobs, 2, 20.0)
    assert score(jobs, got.placements)[:2] == (1, 4)
    assert max(p.end for p in got.placements if p is not None) == 18.0


@pytest.mark.parametrize(("duration", "count", "horizon"), [(69.25, 2, 138.5), (1.1, 3, 3.3)])
def test_a_run_ending_at_the_close_fits(duration: float, count: int, horizon: float) -> None:
    jobs = [Job(duration, 1, s) for s in range(count)]
    got = pack(jobs, 1, horizon)
    assert all(p is not None for p in got.placements)
    assert got.optimal is True and got.matrix_bound == count


def test_a_gap_left_by_a_wide_run_is_backfilled() -> None:
    # Card 0 frees at hour 2, card 1 at 6; the 2-card run waits for both. The 4 h run
    # after it goes into the idle stretch on card 0 instead of after hour 9.
    jobs = [Job(2.0, 1, 0), Job(6.0, 1, 0), Job(3.0, 2, 0), Job(4.0, 1, 1)]
    got = serial(jobs, range(4), 2, 9.0)
    check(jobs, 2, 9.0, got)
    assert got[3] is not None and got[3].start == 2.0
    assert _list(jobs, 2, 9.0)[3] is None
    assert all(p is not None for p in pack_fast(jobs, 2, 9.0))


def test_evaluations_follow_their_run() -> None:
    jobs = [Job(4.0, 1, 0), Job(1.0, 1, 0), Job(1.0, 1, -1, after=0), Job(1.0, 1, -1, after=1)]
    got = pack_fast(jobs, 2, 5.0)
    check(jobs, 2, 5.0, got)
    assert all(p is not None for p in got)


def test_a_thousand_runs_pack_whole() -> None:
    rng = random.Random(7)
    jobs = [Job(rng.uniform(5, 40), 1, s) for s in range(8) for _ in range(125)]
    got = pack_fast(jobs, 16, 1500.0)
    check(jobs, 16, 1500.0, got)
    assert score(jobs, got)[1] >= score(jobs, _list(jobs, 16, 1500.0))[1]


def test_fast_reports_unknown_when_runs_are_left_out() -> None:
    jobs = [Job(d, 1, 0) for d in (13.0, 5.0, 10.0, 8.0)] + [Job(13.0, 1, 1)]
    got = pack(jobs, 2, 20.0)
    assert got.optimal is None
    assert got.matrix_bound == capacity_bound(jobs, 2, 20.0) >= 4


def test_cp_sat_on_durations_of_no_whole_unit() -> None:
    pytest.importorskip("ortools")
    # Thirds of an hour and sevenths are no whole number of seconds: milliseconds,
    # durations rounded up, and still the optimum.
    jobs = [Job(d, 1, s) for s in range(2) for d in (10 / 3, 22 / 7, 5 / 3, 4.0)]
    got = pack(jobs, 2, 12.0, solver="cp-sat", exact_times=True)
    check(jobs, 2, 12.0, got.placements)
    assert counts(score(jobs, got.placements)) == counts(optimum(jobs, 2, 12.0))
    assert got.optimal is True

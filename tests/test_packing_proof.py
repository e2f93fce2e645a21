"""Proofs of the packers hold for the real durations: against the brute-force oracle on
durations that are no whole number of any grid unit, and on a window filled to the
hundredth of a millisecond."""

from __future__ import annotations

import random
import time

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.packing.bounds import cannot_fit
from planner.packing.objective import Job, counts, score
from planner.packing.pack import pack
from planner.packing.sets import sets_fit
from tests.packing_oracle import check, instance, optimum

RUN_H = 720.0072 / 3600  # five of them fill a 1.00001 h window to 0.1 ms
CASES = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _filled(run_h: float) -> tuple[list[Job], float]:
    return [Job(run_h, 1, s) for s in range(3) for _ in range(5)], 5 * run_h


def _soon(seconds: float = 2.0) -> float:
    return time.monotonic() + seconds


@pytest.mark.parametrize("run_h", [RUN_H, 720.00072 / 3600, 0.2])
def test_five_runs_that_fill_the_window_fit(run_h: float) -> None:
    jobs, horizon = _filled(run_h)
    assert sets_fit(jobs[:5], 1, horizon, _soon()) is True
    assert sets_fit(jobs[:6], 1, horizon, _soon()) is False
    for solver in ("fast", "cp-sat"):
        if solver == "cp-sat":
            pytest.importorskip("ortools")
        got = pack(jobs, 1, horizon, solver=solver, time_limit_s=2.0)  # type: ignore[arg-type]
        check(jobs, 1, horizon, got.placements)
        assert score(jobs, got.placements)[:2] == (1, 5)
        assert got.matrix_bound == 5


@pytest.mark.parametrize("run_h", [RUN_H, 720.00072 / 3600])
def test_the_exact_packer_alone_claims_no_false_optimum(run_h: float) -> None:
    # Without the fast packing to start from: a search on durations rounded up holds at
    # most four; only a bound on durations rounded down may be claimed.
    pytest.importorskip("ortools")
    from planner.packing.cpsat import pack_cp_sat

    jobs, horizon = _filled(run_h)
    got = pack_cp_sat(jobs, 1, horizon, [None] * len(jobs), len(jobs), _soon())
    check(jobs, 1, horizon, got.placements)
    placed = score(jobs, got.placements)[1]
    assert got.matrix_bound >= 5
    assert got.optimal is not True or placed == 5


def _off_grid(rng: random.Random) -> tuple[list[Job], int, float]:
    """A tight random instance whose durations are no whole number of milliseconds."""
    jobs, n, h = instance(rng, tight=True)
    jobs = [j._replace(duration=j.duration + rng.uniform(0, 1e-6)) for j in jobs]
    return jobs, n, h


@CASES
@given(rng=st.randoms(use_true_random=False))
def test_cp_sat_proofs_hold_off_the_grid(rng: random.Random) -> None:
    pytest.importorskip("ortools")
    jobs, n, h = _off_grid(rng)
    best = optimum(jobs, n, h)
    got = pack(jobs, n, h, solver="cp-sat", time_limit_s=1.0)
    check(jobs, n, h, got.placements)
    key = score(jobs, got.placements)
    assert counts(key) <= counts(best)
    if got.optimal:
        assert counts(key) == counts(best)
    assert got.matrix_bound >= best[1]


@CASES
@given(rng=st.randoms(use_true_random=False), family=st.sampled_from([False, True]))
def test_sets_fit_agrees_with_the_oracle(rng: random.Random, family: bool) -> None:
    jobs, n, h = _off_grid(rng) if family else instance(rng, evals=False)
    all_fit = optimum(jobs, n, h)[1] == len(jobs)
    answer = sets_fit(jobs, n, h, _soon(1.0))
    if answer is not None:
        assert answer == all_fit
    if cannot_fit(jobs, n, h):
        assert not all_fit


def test_counting_proves_what_card_hours_miss() -> None:
    # Three runs of 0.6 h on 2 cards of 1 h: 1.8 card-hours fit in 2, but no card holds two.
    jobs = [Job(0.6, 1, 0) for _ in range(3)]
    assert cannot_fit(jobs, 2, 1.0)
    assert sets_fit(jobs, 2, 1.0, _soon()) is False
    assert sets_fit(jobs[:2], 2, 1.0, _soon()) is True


def _seed_sets(lengths: list[float], k: int) -> list[Job]:
    return [Job(d, 1, s) for s in range(k) for d in lengths]


SEVEN_DAYS = [27.75, 31.083, 32.75, 32.75, 33.583, 34.417]  # ablation-7d's runs, hours


def test_capacity_on_a_thousand_runs_over_64_cards_is_proven() -> None:
    # 52 sets of six runs fit on 64 cards in 160 h (most cards hold five runs); 53 do not,
    # although card-hours alone would allow 53.
    assert sets_fit(_seed_sets(SEVEN_DAYS, 52), 64, 160.0, _soon(20.0)) is True
    assert sets_fit(_seed_sets(SEVEN_DAYS, 53), 64, 160.0, _soon(20.0)) is False
    assert sum(SEVEN_DAYS) * 53 < 64 * 160.0


def test_every_seed_set_where_a_tight_packing_holds_them() -> None:
    # Five seed sets of five runs fit three cards exactly; the fast packer completes four.
    lengths = [122.457, 164.408, 31.359, 41.225, 156.973]
    jobs = _seed_sets(lengths, 5)
    horizon = 861.001
    assert sets_fit(jobs, 3, horizon, _soon(10.0)) is True
    got = pack(jobs, 3, horizon, solver="cp-sat", time_limit_s=10.0)
    check(jobs, 3, horizon, got.placements)
    assert score(jobs, got.placements)[:2] == (5, 25)
    assert got.optimal is True


def test_a_reason_never_reads_as_if_the_run_fits() -> None:
    from planner.packing.objective import Packing, Placement
    from planner.packing.why import Reasons

    # 0.19999 h idle at the end of a card; the left-out run needs 0.2 h.
    jobs = [Job(0.80001, 1, 0), Job(0.2, 1, 1)]
    packing = Packing([Placement(0.0, 0.80001, (0,)), None], True, 1, "fast")
    text = Reasons(["a", "b"], jobs, packing, 1, 1.0).why(1)
    assert text.endswith("leave 0.19999 card-hours; this run needs 0.20000")
    jobs = [Job(0.80001, 1, 0), Job(0.2, 1, 0)]
    text = Reasons(["a", "b"], jobs, packing, 1, 1.0).why(1)
    assert "needs 0.20000 h" in text and "idle is 0.19999 h" in text


def test_sets_fit_without_the_solver_loads_no_optimizer() -> None:
    import subprocess
    import sys

    code = ("import sys, time\n"
            "from planner.packing.objective import Job\n"
            "from planner.packing.sets import sets_fit\n"
            "jobs = [Job(d, 1, s) for s in range(5)\n"
            "        for d in (122.457, 164.408, 31.359, 41.225, 156.973)]\n"
            "print(sets_fit(jobs, 3, 861.001, time.monotonic() + 10, solver=False),\n"
            "      'ortools' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.split()
    assert out == ["True", "False"]


def test_a_deadline_already_past_still_gives_a_sound_packing() -> None:
    pytest.importorskip("ortools")
    jobs = [Job(d, 1, s) for s in range(2) for d in (13.0, 5.0, 10.0, 8.0)]
    got = pack(jobs, 2, 20.0, solver="cp-sat", deadline=time.monotonic() - 1.0)
    check(jobs, 2, 20.0, got.placements)
    assert got.optimal is not True or counts(score(jobs, got.placements)) == counts(
        optimum(jobs, 2, 20.0))
    assert got.matrix_bound >= optimum(jobs, 2, 20.0)[1]

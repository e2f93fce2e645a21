"""Capacity: the seed sets, extra variants, versions and documents a window holds, checked
against a brute-force optimum on small instances and by planning what it claims."""

from __future__ import annotations

import math
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.campaign import plan_campaign
from planner.packing.capacity import SetTemplate, more_seeds, sets_bound
from planner.packing.capacity_search import training_capacity
from planner.packing.pack import EPS_H, Job, pack
from planner.planfile.export import plan_toml, read_plan
from planner.planning.render import render
from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from tests.conftest import CREATED, shipped
from tests.packing_oracle import _fits, check
from tests.run_fixtures import harness as h

ORACLE_JOBS = 8
"""Most runs the brute-force search is asked about (it is exponential)."""


def _instance(rng: random.Random, uneven: bool = False) -> tuple[list[Job], int, float]:
    """One seed set of 1-8 runs (some with an evaluation), 1-4 cards, and a window of
    0.4-2.5 times the set's work per card; `uneven`: durations in hundredths of an hour,
    where card-hours alone often leave room no schedule has."""
    n_cards = rng.randint(1, 4)
    width = rng.choice([1, 2]) if n_cards > 1 else 1
    runs = rng.randint(1, 8)

    def hours() -> float:
        if uneven:
            return round(rng.uniform(1, 9), 2)
        return rng.choice([0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.5])

    jobs = [Job(hours(), width, 0) for _ in range(runs)]
    for _ in range(rng.randint(0, min(2, 8 - runs))):
        jobs.append(Job(rng.choice([0.25, 0.5, 1.0]), width, -1, rng.randrange(runs)))
    work = sum(j.duration * j.cards for j in jobs)
    horizon = round(rng.uniform(0.4, 2.5) * work / n_cards, 1) or 0.5
    return jobs, n_cards, horizon


def _all_fit(jobs: list[Job], n_cards: int, horizon: float) -> bool:
    """Whether some schedule places every job: depth-first over active schedules on the
    card-count profile, as `tests.packing_oracle.optimum` searches, stopping at the first
    whole one. A branch dies as soon as a job left has no start: placing more runs only
    moves every earliest start later."""
    if any(j.cards > n_cards or not math.isfinite(j.duration) for j in jobs):
        return False
    seen: set[frozenset[tuple[int, float]]] = set()

    def earliest(i: int, starts: dict[int, float],
                 placed: list[tuple[float, float, int]]) -> float | None:
        j = jobs[i]
        ready = starts[j.after] + jobs[j.after].duration if j.after >= 0 else 0.0
        for t in sorted({ready, *(e for _, e, _ in placed if e > ready)}):
            if t + j.duration > horizon + EPS_H:
                return None
            if _fits(placed, t, j.duration, j.cards, n_cards):
                return t
        return None

    def go(starts: dict[int, float], placed: list[tuple[float, float, int]]) -> bool:
        if len(starts) == len(jobs):
            return True
        state = frozenset((i, round(t, 6)) for i, t in starts.items())
        if state in seen:
            return False
        seen.add(state)
        options = []
        for i, j in enumerate(jobs):
            if i in starts or (j.after >= 0 and j.after not in starts):
                continue
            t = earliest(i, starts, placed)
            if t is None:
                return False
            options.append((i, t))
        return any(go({**starts, i: t}, [*placed, (t, t + jobs[i].duration, jobs[i].cards)])
                   for i, t in options)

    return go({}, [])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_seed_sets_against_the_oracle(seed: int, uneven: bool) -> None:
    jobs, n_cards, horizon = _instance(random.Random(seed), uneven)
    template = SetTemplate(jobs)
    cap = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon)
    sets, bound = cap.seed_sets, cap.seed_sets_upper_bound
    assert sets is not None and bound is not None and sets <= bound
    assert bound <= sets_bound(template, n_cards, horizon) or cap.seed_sets_proven
    # The sets found are packed whole, as planning that many seeds packs them.
    if sets:
        built = template.build(sets)
        placed = pack(built, n_cards, horizon).placements
        assert all(p is not None for p in placed)
        check(built, n_cards, horizon, placed)
    more = template.build(sets + 1)
    if len(more) <= ORACLE_JOBS and cap.seed_sets_proven:
        assert not _all_fit(more, n_cards, horizon), "proven, yet one more set fits"
    beyond = template.build(bound + 1)
    if len(beyond) <= ORACLE_JOBS:
        assert not _all_fit(beyond, n_cards, horizon), "a schedule beats the bound"
    truth = next((k for k in range(sets + 1, bound + 1)
                  if len(template.build(k)) <= ORACLE_JOBS
                  and not _all_fit(template.build(k), n_cards, horizon)), None)
    if truth is not None:
        assert sets <= truth - 1


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1))
def test_extra_variants_fit_beside_the_asked_sets(seed: int) -> None:
    jobs, n_cards, horizon = _instance(random.Random(seed))
    cap = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon)
    if not cap.seed_sets:
        assert cap.extra_variants == 0
        return
    from planner.packing.capacity_search import SetSearch

    search = SetSearch(jobs, n_cards, horizon)
    run, evals = search.median_variant()
    k = cap.extra_variants or 0
    built = search.template.build(1, run * k, [e._replace(after=e.after + n)
                                               for n in range(k) for e in evals])
    placed = pack(built, n_cards, horizon).placements
    assert all(p is not None for p in placed)
    check(built, n_cards, horizon, placed)


def _plan(data: dict[str, Any]) -> Any:
    return plan_campaign(parse_preset(data, "test.toml"), load_catalog(), created=CREATED)


def _with_seeds(data: dict[str, Any], count: int) -> dict[str, Any]:
    kind = data["campaign"]["kind"]
    data[kind]["seeds"] = more_seeds(data[kind]["seeds"], count)
    return data


def _check_plan_capacity(data: dict[str, Any]) -> None:
    cap = _plan(data).summary.capacity
    assert cap is not None and cap.seed_sets is not None
    full = _plan(_with_seeds(data, cap.seed_sets)).summary
    assert full.runs_scheduled == full.runs_total, "planning the capacity leaves runs out"
    if cap.seed_sets_proven:
        over = _plan(_with_seeds(data, cap.seed_sets + 1)).summary
        assert over.runs_scheduled < over.runs_total


def test_planning_the_capacity_places_every_run_and_one_more_set_does_not() -> None:
    for name in ("ablation-3d", "ablation-7d", "ablation-30d", "adaptation-30d"):
        _check_plan_capacity(shipped(name))
    wide = shipped("ablation-7d")
    wide["campaign"].update(cards=8, window_days=30)
    cap = _plan(wide).summary.capacity
    assert cap is not None and cap.seed_sets is not None and cap.seed_sets > 3
    _check_plan_capacity(wide)


def test_asked_seeds_that_do_not_fit_give_a_capacity_below_them() -> None:
    data = _with_seeds(shipped("ablation-7d"), 6)
    plan = _plan(data)
    cap = plan.summary.capacity
    assert cap is not None and cap.seed_sets is not None
    assert cap.seed_sets < cap.seed_sets_asked == 6 and cap.extra_variants == 0
    assert "below the 6 asked" in render(plan)


def test_the_headline_names_the_room_and_plan_toml_reads_back(tmp_path: Any) -> None:
    plan = _plan(shipped("ablation-30d"))
    assert "Room      up to 6 complete seed sets (5 asked; proven)" in render(plan)
    h.write_plan(plan, tmp_path / "plan.toml")
    assert "[summary.capacity]" in plan_toml(plan)
    assert read_plan(tmp_path / "plan.toml") == plan


def test_more_seeds_continue_the_list() -> None:
    assert more_seeds([3, 1, 7], 5) == [3, 1, 7, 8, 9]
    assert more_seeds([3, 1, 7], 2) == [3, 1]


def test_embedding_documents_fit_one_version_and_one_percent_more_do_not() -> None:
    for name in ("embedding-3d", "embedding-7d", "embedding-30d"):
        data = shipped(name)
        cap = _plan(data).summary.capacity
        assert cap is not None and cap.documents and cap.versions is not None
        data["embedding"]["versions"] = 1
        data["embedding"]["documents"] = cap.documents
        fit = _plan(data)
        assert fit.embedding is not None and fit.embedding.versions_fit == 1
        assert fit.summary.capacity is not None and fit.summary.capacity.batches == cap.batches
        data["embedding"]["documents"] = math.ceil(cap.documents * 1.01)
        over = _plan(data)
        assert over.embedding is not None and over.embedding.versions_fit == 0


def test_embedding_versions_fit_and_one_more_does_not() -> None:
    for name in ("embedding-3d", "embedding-7d", "embedding-30d"):
        data = shipped(name)
        cap = _plan(data).summary.capacity
        assert cap is not None and cap.versions
        data["embedding"]["versions"] = cap.versions
        assert _plan(data).embedding.versions_fit == cap.versions  # type: ignore[union-attr]
        data["embedding"]["versions"] = cap.versions + 1
        assert _plan(data).embedding.versions_fit == cap.versions  # type: ignore[union-attr]


def test_readme_capacity_examples_are_the_real_output(capsys: Any) -> None:
    from planner.cli.main import main
    from tests.readme_examples import page_with

    readme = page_with("## How much fits: capacity")
    section = readme.split("## How much fits: capacity")[1].split("\n## ")[0]
    examples: list[tuple[list[str], list[str]]] = []
    for line in section.splitlines():
        if line.startswith("    $ campaign-planner "):
            examples.append((line.split()[2:], []))
        elif line.startswith("    ") and examples and line.strip() != "...":
            examples[-1][1].append(line[4:].rstrip())
    assert len(examples) == 2
    for argv, shown in examples:
        assert main([*argv, "--created", "2026-01-01T00:00:00Z"]) == 0
        out = capsys.readouterr().out.splitlines()
        assert shown and all(s in out for s in shown), (argv, shown)


def test_cp_sat_proves_what_the_fast_bound_cannot() -> None:
    pytest.importorskip("ortools")
    # Four runs on three cards: the bounds leave room for a second set, no schedule has it.
    jobs = [Job(3.37, 1, 0), Job(4.85, 1, 0), Job(3.24, 1, 0), Job(6.45, 1, 0)]
    n_cards, horizon = 3, 12.51
    fast = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon)
    assert (fast.seed_sets, fast.seed_sets_proven, fast.seed_sets_upper_bound) == (1, False, 2)
    assert not _all_fit(SetTemplate(jobs).build(2), n_cards, horizon)
    cap = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon,
                            solver="cp-sat", time_limit_s=5)
    assert (cap.seed_sets, cap.seed_sets_proven, cap.seed_sets_upper_bound) == (1, True, 1)
    # Best-fit decreasing of whole sets finds (and so proves) a second set the list
    # scheduler's orders miss: 8.39 + 5.39, 8.39 + 5.39, 2.94 + 3.51 + 2.94 + 3.51.
    jobs = [Job(2.94, 1, 0), Job(3.51, 1, 0), Job(8.39, 1, 0), Job(5.39, 1, 0)]
    horizon = 13.98
    fast = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon)
    assert (fast.seed_sets, fast.seed_sets_proven) == (2, True)
    # Here the fast packer misses a second set that exists: cp-sat finds and proves it.
    jobs = [Job(5.48, 1, 0), Job(6.46, 1, 0), Job(1.82, 1, 0), Job(5.57, 1, 0), Job(2.5, 1, 0)]
    horizon = 14.64
    fast = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon)
    assert (fast.seed_sets, fast.seed_sets_proven) == (1, False)
    assert _all_fit(SetTemplate(jobs).build(2), n_cards, horizon)
    cap = training_capacity(jobs, pack(jobs, n_cards, horizon), 1, n_cards, horizon,
                            solver="cp-sat", time_limit_s=5)
    assert (cap.seed_sets, cap.seed_sets_proven) == (2, True)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 60), st.integers(0, 60), st.integers(0, 60), st.integers(-5, 70))
def test_climb_finds_the_largest_count_that_fits(lo: int, truth: int, hi: int,
                                                 hint: int) -> None:
    from planner.packing.capacity_search import climb

    lo, truth, hi = sorted((lo, truth, hi))
    tried: list[int] = []

    def fits(k: int) -> tuple[bool, int]:
        tried.append(k)
        return k <= truth, hint

    assert climb(fits, lo, hi) == truth
    assert all(lo < k <= hi for k in tried)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(0.5, 9.0), min_size=1, max_size=5), st.integers(1, 3),
       st.floats(5.0, 20.0))
def test_the_bin_packing_bound_is_never_below_a_schedule(durations: list[float],
                                                         n_cards: int, horizon: float) -> None:
    from planner.packing.capacity import room_for

    unit = [Job(round(d, 2), 1, 0) for d in durations]
    bound = room_for([], unit, n_cards, horizon, 10)
    k = bound + 1
    if k * len(unit) <= ORACLE_JOBS:
        assert not _all_fit(SetTemplate(unit).build(k), n_cards, horizon)

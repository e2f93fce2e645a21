"""A capacity proven by a schedule is a plan: the schedule that proved K seed sets is kept,
and planning K seeds (on the command line, or "Fill to capacity") starts from it, so every
run is placed even where the packer alone would leave one out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

import planner.packing.fast as packing_fast
from planner.campaign import plan_campaign
from planner.packing import witness
from planner.packing.objective import Job
from planner.packing.schedule import Placement
from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from screens import state
from tests.conftest import CREATED, shipped


def _short_one(real: Any) -> Any:
    """A fast packer that always leaves its last run out (one that misses a schedule)."""

    def pack(jobs: Sequence[Job], n_cards: int, horizon: float) -> list[Placement | None]:
        got = real(jobs, n_cards, horizon)
        return [*got[:-1], None] if got else got

    return pack


@pytest.mark.parametrize(("name", "cards"), [("ablation-7d", 3), ("adaptation-30d", 2),
                                             ("ablation-30d", 5)])
def test_fill_to_capacity_plans_every_run_from_the_witness(
        name: str, cards: int, monkeypatch: pytest.MonkeyPatch) -> None:
    witness.forget()
    data = shipped(name)
    data["campaign"]["cards"] = cards
    preset = parse_preset(data, "test.toml")
    plan = plan_campaign(preset, load_catalog(), created=CREATED)
    cap = plan.summary.capacity
    assert cap is not None and cap.seed_sets and cap.seed_sets_proven
    filled = state.fill_to_capacity(preset, plan)
    monkeypatch.setattr(packing_fast, "pack_fast", _short_one(packing_fast.pack_fast))
    got = plan_campaign(filled, load_catalog(), created=CREATED)
    assert got.not_fitting == [], "the plan of a proven capacity leaves a run out"
    witness.forget()
    # Without the witness the crippled packer does leave a run out: the witness placed it.
    assert plan_campaign(filled, load_catalog(), created=CREATED).not_fitting


def test_a_witness_is_kept_only_whole_and_only_for_its_own_runs() -> None:
    witness.forget()
    jobs = [Job(1.0, 1, 0), Job(2.0, 1, 0)]
    witness.remember(jobs, 1, 3.0, [Placement(0.0, 1.0, (0,)), None])
    assert witness.recall(jobs, 1, 3.0) is None
    whole = [Placement(0.0, 1.0, (0,)), Placement(1.0, 3.0, (0,))]
    witness.remember(jobs, 1, 3.0, whole)
    assert witness.recall(jobs, 1, 3.0) == whole
    assert witness.recall(jobs, 2, 3.0) is None
    assert witness.recall(jobs[:1], 1, 3.0) is None
    for n in range(witness.KEEP + 1):
        witness.remember([Job(1.0, 1, 0)], 1, 1.0 + n, [Placement(0.0, 1.0, (0,))])
    assert witness.recall(jobs, 1, 3.0) is None  # the oldest is let go
    witness.forget()

"""What the plan says about its packing: the headline, optimality, the bound, the reasons."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.campaign import plan_campaign
from planner.cli.main import main
from planner.planfile.plan import Plan
from planner.planning.render import fit_words
from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from tests.conftest import CREATED, shipped


def _crowded() -> dict[str, Any]:
    """ablation-7d with six seeds: not every run can fit."""
    data = shipped("ablation-7d")
    data["ablation"]["seeds"] = list(range(6))
    return data


def _plan(data: dict[str, Any], **kw: Any) -> Plan:
    return plan_campaign(parse_preset(data, "test.toml"), load_catalog(), created=CREATED,
                         source="test.toml", **kw)


def _invariants(plan: Plan) -> None:
    c = plan.campaign
    by_card: dict[int, list[tuple[float, float]]] = {}
    by_id = {r.id: r for r in plan.runs}
    for r in plan.runs:
        assert c.usable_from_h - 1e-6 <= r.start_h and r.end_h <= c.usable_until_h + 1e-4
        assert r.effective_batch == r.micro_batch * r.accumulation * len(r.card)
        if r.depends_on:
            assert r.start_h >= by_id[r.depends_on].end_h - 1e-4
        for card in r.card:
            by_card.setdefault(card, []).append((r.start_h, r.end_h))
    for spans in by_card.values():
        spans.sort()
        assert all(s >= e - 1e-4 for (_, e), (s, _) in itertools.pairwise(spans))


def test_the_default_preset_fits_every_run() -> None:
    plan = _plan(shipped("ablation-7d"))
    s = plan.summary
    assert (s.matrix_runs_fit, s.matrix_runs, s.optimal, s.matrix_runs_upper_bound) == (
        18, 18, True, 18)
    assert fit_words(plan) == "18 of 18 runs fit (optimal)"
    assert plan.not_fitting == []
    _invariants(plan)


def test_fast_gives_a_bound_when_runs_are_left_out() -> None:
    plan = _plan(_crowded())
    s = plan.summary
    assert s.optimal == "unknown"
    assert s.matrix_runs_fit <= s.matrix_runs_upper_bound < s.matrix_runs
    assert fit_words(plan) == (f"{s.matrix_runs_fit} of 36 runs fit; no schedule fits more "
                               f"than {s.matrix_runs_upper_bound}")
    _invariants(plan)
    for miss in plan.not_fitting:
        assert "idle card-hours" in miss.reason or "complete seed set" in miss.reason


def test_cp_sat_proves_what_fits() -> None:
    pytest.importorskip("ortools")
    fast = _plan(_crowded())
    exact = _plan(_crowded(), solver="cp-sat", time_limit_s=10.0)
    s = exact.summary
    assert s.optimal is True
    assert s.matrix_runs_fit >= fast.summary.matrix_runs_fit
    assert s.matrix_runs_fit <= s.matrix_runs_upper_bound <= fast.summary.matrix_runs_upper_bound
    assert fit_words(exact).startswith(f"{s.matrix_runs_fit} of 36 runs fit")
    _invariants(exact)


def test_plan_order_is_start_order() -> None:
    plan = _plan(shipped("ablation-30d"))
    starts = [r.start_h for r in plan.runs]
    assert starts == sorted(starts)
    _invariants(plan)


def test_reason_names_the_room_left(tmp_path: Path) -> None:
    data = shipped("ablation-7d")
    data["ablation"]["seeds"] = [0, 1, 2, 3]
    plan = _plan(data)
    assert plan.not_fitting
    reason = plan.not_fitting[0].reason
    assert "after the usable window closes" not in reason
    assert "card-hours" in reason


def test_cli_solver_flag(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "crowded.toml"
    path.write_text(tomli_w.dumps(_crowded()), encoding="utf-8")
    assert main(["--preset", str(path), "--solver", "fast", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["optimal"] == "unknown"
    assert main(["--preset", str(path), "--time-limit", "0"]) == 2
    assert "--time-limit" in capsys.readouterr().err


def test_cli_cp_sat_without_ortools(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    import planner.packing.pack

    monkeypatch.setattr(planner.packing.pack, "have_cp_sat", lambda: False)
    assert main(["--preset", "ablation-7d", "--solver", "cp-sat"]) == 2
    assert "--solver" in capsys.readouterr().err

"""What a plan leaves out is kept whole, and a replan adds it when the runs go faster than
planned: `run` on the revision runs it, and nothing that finished runs again."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.planfile.export import plan_texts, read_plan
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h


def _four_seeds(tmp_path: Path) -> Path:
    """Seeds 0-3 of both configurations planned at 0.3 s a step in a 20 s window on one
    card: three seed sets fit, the fourth is left out. The trainer really takes 0.01 s."""
    d = preset(seeds=(0, 1, 2, 3), window_s=20.0)
    d["ablation"]["command"] = d["ablation"]["command"].replace("--step-seconds 0.3",
                                                                "--step-seconds 0.01")
    return h.make_plan(tmp_path / "w", d)


def test_left_out_runs_are_kept_whole(tmp_path: Path) -> None:
    path = _four_seeds(tmp_path)
    plan = read_plan(path)
    cid = plan.campaign.id
    left = [f"{cid}-baseline-s3", f"{cid}-slow-s3"]
    assert [nf.id for nf in plan.not_fitting] == left
    assert [r.id for r in plan.held] == left
    for run in plan.held:
        assert run.argv and str(run.seed) in run.argv and run.checkpoint_dir.endswith(run.id)
        assert (run.end_h - run.start_h) * 3600 == pytest.approx(3.0, abs=0.5)
    assert plan_texts(read_plan(path)) == (path.read_text(),
                                           (path.parent / "runs.jsonl").read_text())
    # Held runs follow the same rules as scheduled ones.
    data = h.plan_data(path)
    data["held"][0]["id"] = f"{cid}-baseline-s0"
    h.write_plan_data(path, data)
    with pytest.raises(InputError) as info:
        read_plan(path)
    assert "held" in str(info.value.field) and "twice" in str(info.value)


def test_faster_runs_add_the_left_out_seed_set(tmp_path: Path) -> None:
    path = _four_seeds(tmp_path)
    plan = read_plan(path)
    cid = plan.campaign.id
    j = JournalWriter(plan, path.parent)
    t = 0.0
    for run in plan.runs:  # every scheduled run finished at a tenth of its planned time
        t = j.run(run.id, t, 0.03)
    at = datetime.fromtimestamp(T0 + t + 0.1, UTC).isoformat()
    r = h.cli("replan", str(path), "--at", at, "--json", "--out", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    added = [f"{cid}-baseline-s3", f"{cid}-slow-s3"]
    assert out["added"] == added and out["dropped"] == []
    assert out["observed"]["baseline"]["ratio"] == pytest.approx(0.1, rel=0.01)
    rev = read_plan(tmp_path / "r" / "plan.toml")
    assert not rev.held and not rev.not_fitting
    assert {row.variant: row.missing_seeds for row in rev.summary.table} == \
        {"baseline": [], "slow": []}
    text = h.cli("replan", str(path), "--at", at, "--out", str(tmp_path / "r2")).stdout
    assert f"Now fits too    {added[0]}, {added[1]}" in text
    # Run on the revision: the added seed set runs, nothing that finished runs again.
    done = h.cli("run", str(tmp_path / "r" / "plan.toml"), "--workdir", str(path.parent),
                 "--poll", "0.02")
    assert done.returncode == 0, done.stdout + done.stderr
    traced = {rid: ev for rid, ev in h.traces(rev, path.parent).items() if ev}
    assert sorted(traced) == added
    exports = h.exports(rev, path.parent)
    assert [exports[rid]["steps"] for rid in added] == [10, 10]
    started = [e["run"] for e in h.journal(path.parent) if e["ev"] == "started"]
    assert started[-2:] == added and len(started) == len(plan.runs) + 2


def test_left_out_runs_that_still_do_not_fit_stay_held(tmp_path: Path) -> None:
    path = _four_seeds(tmp_path)
    plan = read_plan(path)
    j = JournalWriter(plan, path.parent)
    t = j.run(plan.runs[0].id, 0.0, 0.3)  # on plan: no room for the fourth seed set
    at = datetime.fromtimestamp(T0 + t, UTC).isoformat()
    r = h.cli("replan", str(path), "--at", at, "--json", "--out", str(tmp_path / "r"))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["added"] == [] and out["dropped"] == []  # never in the schedule: not dropped
    rev = read_plan(tmp_path / "r" / "plan.toml")
    assert [x.id for x in rev.held] == [x.id for x in plan.held]
    assert rev.not_fitting == plan.not_fitting  # with the planner's own reasons
    assert out["room_left"]["card_hours"] >= 0

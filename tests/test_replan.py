"""replan on hand-written journals: observed step times, what is kept, re-timed, dropped
and added, the revision's fields, and every refusal as one line with exit code 2."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from planner.planfile.export import plan_toml, read_plan
from planner.run.journal import Workspace, fold, read_events
from planner.run.replan import replan
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).isoformat()


@pytest.fixture
def slow_half(tmp_path: Path):
    """Seed 0 of both configurations finished, the slow one at twice its step time."""
    plan_path = h.make_plan(tmp_path / "w", preset())
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    j = JournalWriter(plan, plan_path.parent)
    t = j.run(f"{cid}-baseline-s0", 0.0, 0.3)
    j.run(f"{cid}-slow-s0", t, 0.6)
    return plan_path, plan, j, cid


def replan_json(plan_path: Path, *args: str) -> dict:
    r = h.cli("replan", str(plan_path), "--json", *args)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_ratio_drop_and_retime(slow_half, tmp_path: Path) -> None:
    plan_path, plan, _, cid = slow_half
    out = replan_json(plan_path, "--at", iso(40.0 - 14.2), "--out", str(tmp_path / "r"))
    assert out["observed"]["slow"]["ratio"] == pytest.approx(2.0, rel=1e-3)
    assert out["observed"]["baseline"]["ratio"] == pytest.approx(1.0, rel=1e-3)
    assert out["observed"]["slow"]["source"] == "observed"
    assert [d["id"] for d in out["dropped"]] == [f"{cid}-slow-s2"]
    assert out["now_h"] == pytest.approx(25.8 / 3600, abs=1e-6)
    rev = read_plan(tmp_path / "r" / "plan.toml")
    dur = {r.id: (r.end_h - r.start_h) * 3600 for r in rev.runs}
    assert dur[f"{cid}-slow-s1"] == pytest.approx(2 * dur[f"{cid}-baseline-s1"], rel=0.1)
    assert rev.summary.makespan_h <= plan.campaign.usable_until_h + 1e-6
    assert out["projected_end_h"] <= plan.campaign.usable_until_h + 1e-6
    # The revision reads back, and runs again into another revision.
    assert plan_toml(read_plan(tmp_path / "r" / "plan.toml")) == \
        (tmp_path / "r" / "plan.toml").read_text()
    row = {r.variant: r for r in rev.summary.table}
    assert row["slow"].missing_seeds == [2] and row["baseline"].missing_seeds == []


def test_running_keeps_its_card_and_steps_left(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", preset(cards=2, window_s=60.0))
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    j = JournalWriter(plan, plan_path.parent)
    j.run(f"{cid}-baseline-s0", 0.0, 0.3, card=0)
    j.run(f"{cid}-slow-s0", 0.0, 0.6, card=1, until=4, alive=True)
    result = replan(plan, fold(read_events(j.path)), Workspace(plan_path.parent), T0 + 2.4)
    assert result.running == [f"{cid}-slow-s0"]
    run = next(r for r in result.plan.runs if r.id == f"{cid}-slow-s0")
    assert run.card == [1]
    # 6 steps left at 0.6 s.
    assert (run.end_h - result.now_h) * 3600 == pytest.approx(3.6, rel=1e-3)
    others = [r for r in result.plan.runs if r.id in result.remaining]
    assert all(r.start_h >= result.now_h - 1e-9 for r in others)
    assert not any(r.card == [1] and r.start_h < run.end_h - 1e-9 for r in others)


def test_retry_comes_back_failed_stays(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", preset(window_s=120.0))
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    j = JournalWriter(plan, plan_path.parent)
    t = j.run(f"{cid}-baseline-s0", 0.0, 0.3, until=5, outcome="retry")
    t = j.run(f"{cid}-slow-s0", t, 0.3, until=5, outcome="retry")
    t = j.run(f"{cid}-slow-s0", t, 0.3, until=5, attempt=2, outcome="failed")
    result = replan(plan, fold(read_events(j.path)), Workspace(plan_path.parent), T0 + t)
    assert f"{cid}-baseline-s0" in result.remaining
    assert f"{cid}-slow-s0" not in result.remaining
    assert f"{cid}-slow-s0" in {r.id for r in result.plan.runs}  # kept as it ended


def test_faster_runs_bring_held_ones_back(slow_half, tmp_path: Path) -> None:
    plan_path, _, j, cid = slow_half
    replan_json(plan_path, "--at", iso(40.0 - 14.2), "--out", str(tmp_path / "r1"))
    rev = read_plan(tmp_path / "r1" / "plan.toml")
    assert [r.id for r in rev.held] == [f"{cid}-slow-s2"]
    # Later, the baseline's seed 1 ran at a tenth of its planned time: room again.
    j.run(f"{cid}-baseline-s1", 13.0, 0.03)
    out = replan_json(tmp_path / "r1" / "plan.toml", "--workdir", str(plan_path.parent),
                      "--at", iso(14.0), "--out", str(tmp_path / "r2"))
    assert out["added"] == [f"{cid}-slow-s2"]
    assert out["revision"] == 2 and out["parent"] == f"{cid}-r1"
    assert not read_plan(tmp_path / "r2" / "plan.toml").held


def test_campaign_ratio_for_a_variant_not_seen(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", preset())
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    j = JournalWriter(plan, plan_path.parent)
    j.run(f"{cid}-baseline-s0", 0.0, 0.45)
    out = replan_json(plan_path, "--at", iso(5.0), "--out", str(tmp_path / "r"))
    slow = out["observed"]["slow"]
    assert slow["source"] == "campaign ratio" and slow["runs"] == 0
    assert slow["ratio"] == pytest.approx(1.5, rel=1e-3)
    r = h.cli("replan", str(plan_path), "--at", iso(5.0), "--out", str(tmp_path / "r2"))
    assert "campaign ratio" in r.stdout and "Run it with: campaign-planner run" in r.stdout


def _refused(r, *words: str) -> None:
    assert r.returncode == 2, (r.stdout, r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]


def test_refusals(slow_half, tmp_path: Path) -> None:
    plan_path, _, j, _ = slow_half
    out = tmp_path / "r"
    _refused(h.cli("replan", str(plan_path), "--at", iso(-60), "--out", str(out)),
             "--at", "before the window")
    _refused(h.cli("replan", str(plan_path), "--at", "yesterday", "--out", str(out)), "--at")
    assert not out.exists()
    other = h.make_plan(tmp_path / "other", preset(seeds=(0, 1)))
    _refused(h.cli("replan", str(other), "--workdir", str(plan_path.parent), "--out",
                   str(out)), "journal", "not")
    empty = tmp_path / "empty"
    empty.mkdir()
    _refused(h.cli("replan", str(plan_path), "--workdir", str(empty), "--out", str(out)),
             "no run session")
    h.cli("replan", str(plan_path), "--out", str(out), "--at", iso(20))
    _refused(h.cli("replan", str(plan_path), "--out", str(out), "--at", iso(20)), "exists")
    with open(j.path, "a") as fh:
        fh.write('{"t": 1, "ev": "progress", "run": "x", "attempt": 1, "step": -1.5}\n')
        fh.write('{"t": 2, "ev": "stop"}\n')
    _refused(h.cli("replan", str(plan_path), "--out", str(tmp_path / "r9")), "journal")
    assert not (tmp_path / "r9").exists()


def test_fresh_plan_has_no_revision_fields(tmp_path: Path) -> None:
    path = h.make_plan(tmp_path / "w", preset())
    data = h.plan_data(path)
    assert "revision" not in data and "parent" not in data and not data["held"]
    assert "revision" not in path.read_text() and "parent" not in path.read_text()


def test_revision_refused_while_an_executor_runs(slow_half, tmp_path: Path) -> None:
    from planner.run import prepare

    plan_path, _, _, _ = slow_half
    replan_json(plan_path, "--at", iso(20.0), "--out", str(tmp_path / "r"))
    ws = Workspace(plan_path.parent)
    with prepare.locked(ws):
        r = h.cli("run", str(tmp_path / "r" / "plan.toml"), "--workdir", str(ws.workdir))
    _refused(r, "another executor")
    # A plan that is not a revision of the journal's still needs --accept-changed-plan.
    other = h.make_plan(tmp_path / "o", preset(seeds=(0, 1)))
    _refused(h.cli("run", str(other), "--workdir", str(ws.workdir)), "the plan changed")

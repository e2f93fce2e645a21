"""An interrupted run is re-timed from the step its checkpoint holds at least: the newest
step it reported before its latest checkpoint was written, never a later one."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.planfile.export import read_plan
from planner.run.journal import Workspace, fold, read_events
from planner.run.observe import retimed_h
from planner.run.params import run_fingerprint
from planner.run.replan import replan
from planner.run.replan_text import render
from planner.run.resume import Resume
from planner.run.status import render as render_status
from planner.run.status import summarize
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h


def _interrupted(tmp_path: Path, *, checkpoint: bool = True, afresh: bool = False):
    """Baseline seed 0 finished; slow seed 0 reported steps 1-6 at 0.6 s and was cut off,
    its checkpoint written just after step 5."""
    plan_path = h.make_plan(tmp_path / "w", preset(window_s=60.0))
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    slow = next(r for r in plan.runs if r.id == f"{cid}-slow-s0")
    j = JournalWriter(plan, plan_path.parent)
    t = j.run(f"{cid}-baseline-s0", 0.0, 0.3)
    j.run(slow.id, t, 0.6, until=6, outcome="interrupted")
    if checkpoint:
        j.add(t + 5 * 0.6 + 0.01, "checkpointed", run=slow.id, attempt=1,
              mtime=T0 + t + 5 * 0.6 + 0.005)
        resume = plan_path.parent / slow.resume
        resume.parent.mkdir(parents=True, exist_ok=True)
        resume.write_text("{}")
    if afresh:  # a later attempt started from nothing: the checkpoint was not there
        j.add(t + 5.0, "started", run=slow.id, attempt=2, cards=[0], resume="",
              fingerprint=run_fingerprint(slow), pid=999_999_999)
        j.add(t + 5.1, "exited", run=slow.id, attempt=2, code=None, outcome="interrupted")
    ws = Workspace(plan_path.parent)
    return plan, slow, ws, fold(read_events(ws.journal))


def _duration_s(result, run_id: str) -> float:
    run = next(r for r in result.plan.runs if r.id == run_id)
    return (run.end_h - run.start_h) * 3600


def test_only_the_steps_after_the_checkpoint_are_packed(tmp_path: Path) -> None:
    plan, slow, ws, hist = _interrupted(tmp_path)
    result = replan(plan, hist, ws, T0 + 10.0)
    assert result.resuming == {slow.id: Resume(5, recorded=False)}
    assert slow.id in result.remaining
    # The five steps the checkpoint holds, at the observed 0.6 s, are not run again.
    full = retimed_h(slow, result.observed["slow"]) * 3600
    assert result.observed["slow"].seconds_per_step == pytest.approx(0.6, rel=1e-3)
    assert _duration_s(result, slow.id) == pytest.approx(full - 5 * 0.6, rel=1e-3)
    assert result.as_json()["resuming"][slow.id]["from_step"] == 5
    assert f"Resumes   {slow.id} from step 5 at least" in render(result, Path("p"), ws.workdir)
    s = summarize(plan, hist, ws, now=T0 + 10.0)
    row = next(r for r in s["runs"] if r["id"] == slow.id)
    assert row["resumes_from_step"] == 5
    assert "resumes from step 5/10 at least" in render_status(s)


def test_without_a_checkpoint_it_starts_over(tmp_path: Path) -> None:
    plan, slow, ws, hist = _interrupted(tmp_path, checkpoint=False)
    result = replan(plan, hist, ws, T0 + 10.0)
    assert result.resuming == {}
    full = retimed_h(slow, result.observed["slow"]) * 3600
    assert _duration_s(result, slow.id) == pytest.approx(full, rel=1e-3)


def test_a_checkpoint_that_is_gone_or_passed_over_counts_for_nothing(tmp_path: Path) -> None:
    plan, slow, ws, hist = _interrupted(tmp_path / "gone")
    (ws.workdir / slow.resume).unlink()
    assert replan(plan, hist, ws, T0 + 10.0).resuming == {}
    plan, slow, ws, hist = _interrupted(tmp_path / "afresh", afresh=True)
    assert replan(plan, hist, ws, T0 + 10.0).resuming == {}

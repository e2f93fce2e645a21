"""The executor's parts on their own: fingerprints, the journal's torn tail,
card lists, the status projection, and a run whose processes outlive its shell."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.run import prepare
from planner.run.journal import Journal, Workspace, fold, read_events
from planner.run.params import plan_changes, plan_fingerprint, run_fingerprint, run_parameters
from planner.run.status import render, summarize
from tests.conftest import plan_dict, shipped
from tests.run_fixtures import harness as h


def test_run_fingerprint_ignores_cards_times_and_retries() -> None:
    plan = plan_dict(shipped("ablation-7d"))
    run = plan.runs[0]
    moved = run.model_copy(update={"card": [3], "start_h": 99.0, "end_h": 130.0,
                                   "max_retries": 5})
    assert run_fingerprint(moved) == run_fingerprint(run)
    assert run_fingerprint(run.model_copy(update={"steps": 1})) != run_fingerprint(run)
    wider = run.model_copy(update={"card": [0, 1]})
    assert run_fingerprint(wider) != run_fingerprint(run)  # the card count is a parameter


def test_plan_fingerprint_ignores_when_the_plan_was_written() -> None:
    plan = plan_dict(shipped("ablation-7d"))
    later = plan.model_copy(update={"campaign": plan.campaign.model_copy(
        update={"created": "2030-01-01T00:00:00+00:00"})})
    assert plan_fingerprint(later) == plan_fingerprint(plan)


def test_plan_changes_in_words() -> None:
    plan = plan_dict(shipped("ablation-7d"))
    old = {r.id: run_parameters(r) for r in plan.runs}
    new = dict(old)
    first, second = list(old)[:2]
    del new[first]
    new[second] = {**new[second], "steps": 7}
    new["extra-run"] = {"id": "extra-run"}
    text = plan_changes(old, new)
    assert text == (f"1 run added: extra-run; 1 removed: {first}; 1 changed: {second} "
                    f"(steps 30000 → 7)")
    assert "no run's parameters changed" in plan_changes(old, old)


def test_journal_drops_a_torn_last_line_and_trims_it(tmp_path: Path) -> None:
    path = tmp_path / "j.jsonl"
    j = Journal(path)
    j.append("started", run="a", attempt=1, cards=[0], fingerprint="f", pid=1)
    j.close()
    with open(path, "ab") as fh:
        fh.write(b'{"t": 1, "ev": "exi')  # the crash happened mid-write
    assert [e["ev"] for e in read_events(path)] == ["started"]
    j = Journal(path)
    j.append("exited", run="a", attempt=1, code=0, outcome="finished")
    j.close()
    events = read_events(path)
    assert [e["ev"] for e in events] == ["started", "exited"]
    assert fold(events).runs["a"].state == "finished"
    path.write_text('{"t": 1, "ev": "stop"}\nnot json\n{"t": 2, "ev": "stop"}\n')
    with pytest.raises(InputError, match="line 2"):
        read_events(path)


def test_parse_cards() -> None:
    plan = plan_dict(shipped("ablation-7d"))
    assert prepare.parse_cards(None, plan) == [0, 1, 2, 3]
    assert prepare.parse_cards("4-6,0", plan) == [4, 5, 6, 0]
    with pytest.raises(InputError):
        prepare.parse_cards("", plan)


def _journal(tmp_path: Path, events: list[dict[str, object]]) -> Workspace:
    ws = Workspace(tmp_path)
    ws.root.mkdir(parents=True)
    ws.journal.write_text("".join(json.dumps(e) + "\n" for e in events))
    return ws


def test_status_projects_a_slow_campaign_past_the_window(tmp_path: Path) -> None:
    plan = plan_dict(shipped("ablation-7d"))
    now = time.time()
    origin = now - 80 * 3600  # hour 80 of the window
    events: list[dict[str, object]] = [{"t": origin, "ev": "executor", "cards": [0, 1, 2, 3],
                                        "window_start": origin, "pid": 1}]
    # The first four runs took 1.5 times their planned hours.
    for run in plan.runs[:4]:
        t0 = origin + run.start_h * 3600
        t1 = t0 + (run.end_h - run.start_h) * 1.5 * 3600
        events += [{"t": t0, "ev": "started", "run": run.id, "attempt": 1, "cards": run.card,
                    "fingerprint": run_fingerprint(run), "pid": 0},
                   {"t": t1, "ev": "exited", "run": run.id, "attempt": 1, "code": 0,
                    "outcome": "finished"}]
    s = summarize(plan, fold(read_events(_journal(tmp_path, events).journal)),
                  Workspace(tmp_path), now)
    assert s["counts"]["done"] == 4 and s["counts"]["pending"] == len(plan.runs) - 4
    assert s["pace"] == pytest.approx(1.5, abs=0.01)
    assert s["behind_s"] > 0 and s["projected_end_h"] > s["usable_until_h"]
    assert s["no_longer_fit"] and s["no_longer_fit"][-1] == plan.runs[-1].id
    text = render(s)
    assert "behind the plan" in text and "will no longer end by hour 162" in text


def test_status_before_any_session(tmp_path: Path) -> None:
    plan = plan_dict(shipped("ablation-7d"))
    s = summarize(plan, fold([]), Workspace(tmp_path))
    assert not s["started"] and s["counts"]["pending"] == len(plan.runs)
    assert s["projected_end_h"] == pytest.approx(plan.summary.makespan_h, abs=0.01)
    assert "not started" in render(s)
    assert "plan" not in s  # no `"plan": null` before a session names the plan it ran


def test_processes_outliving_their_shell_end_before_the_run_does(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={}, robustness=[])
    data["ablation"]["shell"] = True
    data["ablation"]["command"] = "sleep 600 & echo {run_id}"
    plan_path = h.make_plan(tmp_path / "p", data)
    os.environ["CAMPAIGN_LINGER_S"] = "0.5"
    try:
        # Waiting out the stray sleep would overrun the CLI's 60 s timeout and raise.
        proc = h.cli("run", str(plan_path), "--poll", "0.02")
    finally:
        del os.environ["CAMPAIGN_LINGER_S"]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert h.campaign_pids(plan_path.parent) == []  # the stray sleep was killed


def test_leftovers_are_killed_only_when_they_carry_the_run_id(tmp_path: Path) -> None:
    import subprocess

    from planner.run.procs import kill_leftovers

    env = {**os.environ, "CAMPAIGN_RUN_ID": "r1", "CAMPAIGN_RUN_TOKEN": "ab12",
           "CAMPAIGN_WORKDIR": str(tmp_path)}
    mine = subprocess.Popen(["sleep", "30"], env=env, start_new_session=True)
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        assert kill_leftovers(other.pid, "r1", "ab12", tmp_path) == 0  # another program
        assert kill_leftovers(mine.pid, "r2", "ab12", tmp_path) == 0
        # The run id alone is not enough: the attempt's token and the folder are named too.
        assert kill_leftovers(mine.pid, "r1", "cd34", tmp_path) == 0
        assert kill_leftovers(mine.pid, "r1", "ab12", tmp_path / "elsewhere") == 0
        assert kill_leftovers(mine.pid, "r1", "", tmp_path) == 0
        assert kill_leftovers(mine.pid, "r1", "ab12", tmp_path) == 1
        assert mine.wait(60) == -9 and other.poll() is None
    finally:
        other.kill()
        other.wait()

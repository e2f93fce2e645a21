"""`campaign-planner run` end to end on a tiny plan: cards, environment, logs, journal,
status, dry run, the lock, and Ctrl-C."""

from __future__ import annotations

import json
import shutil
import signal
import time
from pathlib import Path

import pytest

from planner.run.observe import planned_step_s
from tests.given_times import rewrite
from tests.run_fixtures import harness as h


@pytest.fixture(scope="module")
def finished(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A plan run to the end once; tests read what it left."""
    plan_path = h.make_plan(tmp_path_factory.mktemp("done"), h.preset())
    proc = h.start(plan_path, "--cards", "2,5", out=plan_path.parent / "executor.out")
    assert proc.wait(300) == 0, (plan_path.parent / "executor.out").read_text()
    return plan_path


def test_every_run_finishes_with_its_identity_in_its_environment(finished: Path) -> None:
    plan, wd = h.load(finished), finished.parent
    traces = h.traces(plan, wd)
    for run in plan.runs:
        if run.kind != "train":
            continue
        (start,) = [e for e in traces[run.id] if e["ev"] == "start"]
        assert start["env_run"] == run.id and start["env_seed"] == str(run.seed)
        assert start["cuda"] in ("2", "5")  # one of the cards given, never the plan's own
        assert start["env_resume"] == ""  # nothing to resume from on a first start
        assert h.exports(plan, wd)[run.id]["state"] == h.expected(run)
        assert (wd / "campaign-run" / "logs" / f"{run.id}.log").read_text().count("done") == 1
        manifest = wd / run.checkpoint_dir / f"{run.id}.manifest.toml"
        assert "fingerprint = " in manifest.read_text()


def test_a_robustness_run_starts_after_the_run_it_evaluates(finished: Path) -> None:
    events = h.journal(finished.parent)
    plan = h.load(finished)
    for run in plan.runs:
        if run.depends_on:
            parent_end = next(e["t"] for e in events if e.get("run") == run.depends_on
                              and e["ev"] == "exited")
            start = next(e["t"] for e in events if e.get("run") == run.id
                         and e["ev"] == "started")
            assert start >= parent_end
            assert h.exports(plan, finished.parent)[run.id] is not None


def test_journal_records_starts_checkpoints_and_exits(finished: Path) -> None:
    events = h.journal(finished.parent)
    kinds = {e["ev"] for e in events}
    assert {"plan", "executor", "started", "checkpointed", "exited"} <= kinds
    exits = [e for e in events if e["ev"] == "exited"]
    assert all(e["code"] == 0 and e["outcome"] == "finished" for e in exits)


def test_run_again_reruns_nothing(finished: Path) -> None:
    before = len(h.journal(finished.parent))
    proc = h.cli("run", str(finished), "--poll", "0.02")
    assert proc.returncode == 0, proc.stderr
    assert "6 finished, 0 failed" in proc.stdout
    assert not [e for e in h.journal(finished.parent)[before:] if e["ev"] == "started"]


def test_status_counts_and_projection(finished: Path, tmp_path: Path) -> None:
    # The journal on given times (`tests/given_times.py`), in a copy: every step at half
    # its planned time, however long the machine took.
    plan = h.load(finished)
    (tmp_path / "campaign-run").mkdir()
    h.copy_plan(finished, tmp_path / "plan.toml")
    journal = tmp_path / "campaign-run" / "journal.jsonl"
    shutil.copy(finished.parent / "campaign-run" / "journal.jsonl", journal)
    rewrite(journal, plan, {v: 0.5 for v in planned_step_s(plan)}, time.time() - 10_000)
    proc = h.cli("status", str(tmp_path), "--json")
    assert proc.returncode == 0, proc.stderr
    s = json.loads(proc.stdout)
    assert s["counts"] == {"done": 6, "running": 0, "pending": 0, "failed": 0, "blocked": 0}
    assert s["no_longer_fit"] == [] and s["behind_s"] < 0
    assert {v["ratio"] for v in s["observed"].values()} == {0.5}
    text = h.cli("status", str(tmp_path)).stdout
    assert "6 done" in text and "ahead of the plan" in text


def test_dry_run_writes_nothing(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset())
    before = h.tree(tmp_path)
    proc = h.cli("run", str(plan_path), "--dry-run", "--cards", "0-2")
    assert proc.returncode == 0, proc.stderr
    assert h.tree(tmp_path) == before
    plan = h.load(plan_path)
    assert all(r.id in proc.stdout for r in plan.runs)
    assert "card 2" in proc.stdout and "exec:" in proc.stdout


def test_shell_commands_run_under_sh(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={}, robustness=[])
    data["ablation"]["shell"] = True
    data["ablation"]["command"] = (
        "mkdir -p {checkpoint_dir} && echo \"$CAMPAIGN_RUN_ID on $CUDA_VISIBLE_DEVICES\" "
        "> {checkpoint_dir}/hello.txt")
    plan_path = h.make_plan(tmp_path / "p", data)
    proc = h.cli("run", str(plan_path), "--poll", "0.02", "--cards", "3")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run = h.load(plan_path).runs[0]
    assert (tmp_path / "p" / run.checkpoint_dir / "hello.txt").read_text() == f"{run.id} on 3\n"


def _wait_for(predicate, timeout: float = 120.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline
        time.sleep(0.02)


def test_ctrl_c_stops_children_and_the_next_run_resumes(tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # runs stop at their first checkpoint until it exists
    plan_path = h.make_plan(tmp_path / "p", h.preset(steps=60, step_s=0.002, every=5,
                                                     robustness=[], gate=gate))
    wd = plan_path.parent
    out = wd / "executor.out"
    proc = h.start(plan_path, out=out)
    plan = h.load(plan_path)
    _wait_for(lambda: sum(any(e["ev"] == "ckpt" for e in t)
                          for t in h.traces(plan, wd).values()) == 2)
    second = h.cli("run", str(plan_path))  # the lock keeps a second executor out
    assert second.returncode == 2 and "another executor" in second.stderr
    proc.send_signal(signal.SIGINT)
    assert proc.wait(300) == 130
    assert h.campaign_pids(wd) == []
    events = h.journal(wd)
    stopped = [e for e in events if e["ev"] == "exited"]
    assert len(stopped) == 2 and {e["outcome"] for e in stopped} == {"stopped"}
    assert any(e["ev"] == "stop" for e in events)
    gate.touch()
    proc = h.start(plan_path, out=out)
    assert proc.wait(300) == 0, out.read_text()
    for trace in h.traces(plan, wd).values():
        starts = [e["step"] for e in trace if e["ev"] == "start"]
        assert len(trace) and starts[0] == 0
    resumed = [t for t in h.traces(plan, wd).values()
               if len([e for e in t if e["ev"] == "start"]) == 2]
    assert len(resumed) == 2 and all([e for e in t if e["ev"] == "start"][1]["step"] > 0
                                     for t in resumed)


def test_runs_left_running_are_adopted_with_a_line_saying_so(tmp_path: Path) -> None:
    gate = tmp_path / "gate"  # runs hold at their first checkpoint until it exists
    plan_path = h.make_plan(tmp_path / "p", h.preset(steps=20, step_s=0.002, every=5,
                                                     robustness=[], gate=gate))
    wd = plan_path.parent
    plan = h.load(plan_path)
    first = h.start(plan_path, out=wd / "first.out")
    _wait_for(lambda: sum(any(e["ev"] == "ckpt" for e in t)
                          for t in h.traces(plan, wd).values()) == 2)
    first.send_signal(signal.SIGKILL)  # the executor alone: its runs live on
    first.wait()
    out = wd / "second.out"
    second = h.start(plan_path, out=out)
    _wait_for(lambda: out.exists() and "followed here" in out.read_text())
    gate.touch()
    assert second.wait(300) == 0, out.read_text()
    lines = out.read_text().splitlines()
    said = [line for line in lines if "still running from an earlier executor: not restarted"
            in line]
    assert len(said) == 1 and "adopted 2 runs" in said[0] and "Ctrl-C stops them" in said[0]
    # It comes before anything else the executor does.
    assert lines.index(said[0]) == 2 and not any(" started " in x for x in lines[:3])

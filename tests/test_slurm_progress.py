"""A campaign run by SLURM alone: its tasks' traces give `status` and `replan` the runs'
states and observed step times, the same as a journal gives them for `run`. The tasks run
as SLURM would run them (one process each, SLURM_ARRAY_TASK_ID set): no SLURM needed."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from planner.run.journal import History, Workspace
from planner.run.observe import planned_step_s
from planner.run.slurm_trace import read_trace, trace_path
from screens.progress_view import view
from tests.given_times import rewrite
from tests.replan_support import preset
from tests.run_fixtures import harness as h


def _env(index: int) -> dict[str, str]:
    return {**os.environ, "SLURM_ARRAY_TASK_ID": str(index), "SLURM_JOB_ID": "42",
            "SLURM_ARRAY_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "0",
            "CAMPAIGN_PROGRESS_EVERY_S": "0.05"}


def _task(script: Path, index: int) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script)], env=_env(index), capture_output=True,
                          text=True, timeout=300)


def _json(*args: str) -> dict[str, Any]:
    r = h.cli(*args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def _until(what, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while not what():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


GIVEN = {"baseline": 1.25, "slow": 2.5}
"""Observed ÷ planned step time each variant is given: not the fixture trainer's own
(1 and 2), so the figures can only come from the given times."""
PAST = 10_000.0
"""Seconds before now the given timeline starts: no event lies in the future."""


def test_slurm_rates_come_out_as_the_executors(tmp_path: Path) -> None:
    data = preset(seeds=(0,), window_s=120.0, step_s=0.05)
    plan_path, out = h.slurm_export(tmp_path / "slurm", data)
    plan = h.load(plan_path)
    for i, _ in enumerate(plan.runs):
        task = _task(out / "campaign.sbatch", i)
        assert task.returncode == 0, task.stdout + task.stderr
    for run in plan.runs:
        events = read_trace(plan_path.parent, run)
        assert [e["ev"] for e in events if e["ev"] in ("started", "exited")] == \
            ["started", "exited"]
        assert any(e["ev"] == "progress" for e in events)
    executor_plan = h.make_plan(tmp_path / "run", data)
    assert h.start(executor_plan, "--progress-every", "0").wait(300) == 0
    journal = executor_plan.parent / "campaign-run" / "journal.jsonl"
    assert any(json.loads(line)["ev"] == "progress" for line in journal.read_text().splitlines())
    # The same given times in the tasks' traces and in the executor's journal.
    t0 = clock = time.time() - PAST
    for run in plan.runs:
        clock = rewrite(trace_path(plan_path.parent, run), plan, GIVEN, clock)
    rewrite(journal, h.load(executor_plan), GIVEN, t0)
    slurm = _json("status", str(plan_path))
    assert slurm["started"] and slurm["counts"]["done"] == len(plan.runs)
    assert "plan" not in slurm  # no session, so no plan path it ran
    run = _json("status", str(executor_plan))
    assert run["counts"]["done"] == len(plan.runs)
    planned = planned_step_s(plan)
    for name, want in GIVEN.items():
        a, b = slurm["observed"][name], run["observed"][name]
        assert a["source"] == b["source"] == "observed" and a["runs"] == b["runs"] == 1
        assert a["ratio"] == b["ratio"] == pytest.approx(want, abs=1e-4)
        assert a["seconds_per_step"] == b["seconds_per_step"] == \
            pytest.approx(planned[name] * want, abs=1e-6)
    # The Progress screen draws them as done.
    v = view(plan, History(), Workspace(plan_path.parent))
    assert v.counts["done"] == len(plan.runs) and {b.state for b in v.bars} == {"done"}
    # replan reads the same records: no session is needed.
    rev = _json("replan", str(plan_path), "--out", str(tmp_path / "rev"))
    assert rev["revision"] == 1 and sorted(rev["finished"]) == sorted(r.id for r in plan.runs)
    assert rev["observed"]["slow"]["ratio"] == slurm["observed"]["slow"]["ratio"]


def test_a_running_task_is_running_and_a_cancelled_one_resumes(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    data = preset(seeds=(0,), window_s=120.0, step_s=0.05)
    data["ablation"]["command"] = data["ablation"]["command"].replace(
        " {overrides}", f" --gate {shlex.quote(str(gate))} {{overrides}}")
    plan_path, out = h.slurm_export(tmp_path, data)
    plan = h.load(plan_path)
    wd, run = plan_path.parent, plan.runs[0]
    task = subprocess.Popen(["bash", str(out / "campaign.sbatch")], env=_env(0),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        # Held at its first checkpoint (step 5) until the gate opens.
        _until(lambda: any(e["ev"] == "checkpointed" for e in read_trace(wd, run))
               and any(e["ev"] == "progress" and e["step"] == 5 for e in read_trace(wd, run)))
        s = _json("status", str(plan_path))
        row = s["runs"][0]
        assert row["state"] == "running" and row["progress"] == "reported" and row["step"] == 5
        assert _json("replan", str(plan_path), "--out", str(tmp_path / "r1"))["running"] == \
            [run.id]
        task.send_signal(signal.SIGTERM)  # scancel
        assert task.wait(300) == 143
    finally:
        if task.poll() is None:
            task.kill()
    exited = [e for e in read_trace(wd, run) if e["ev"] == "exited"]
    assert [e["outcome"] for e in exited] == ["interrupted"]
    s = _json("status", str(plan_path))
    assert s["runs"][0]["state"] == "pending" and s["runs"][0]["detail"] == "interrupted"
    # Its checkpoint, as `run` sees it (lstat), and the steps reported before it: the
    # replan packs only the steps after the newest of those, the progress file's own
    # (step 5, written just before the checkpoint) among them.
    events = read_trace(wd, run)
    ck = [e for e in events if e["ev"] == "checkpointed"][-1]
    assert ck["mtime"] == pytest.approx((wd / run.resume).lstat().st_mtime, abs=1e-6)
    before = [e["step"] for e in events if e["ev"] == "progress" and e["t"] <= ck["mtime"]]
    assert max(before, default=0) <= 5
    rev = _json("replan", str(plan_path), "--out", str(tmp_path / "r2"))
    assert rev["resuming"][run.id]["from_step"] == 5 >= max(before, default=0)
    # Submitted again, the attempt is counted on from the trace and the run resumes.
    gate.touch()
    again = _task(out / "campaign.sbatch", 0)
    assert again.returncode == 0, again.stdout
    events = read_trace(wd, run)
    assert [e["attempt"] for e in events if e["ev"] == "started"] == [1, 2]
    assert [e["resume"] for e in events if e["ev"] == "started"] == ["", "checkpoint"]
    assert _json("status", str(plan_path))["runs"][0]["state"] == "done"


def test_a_link_at_the_trace_is_refused(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, preset(seeds=(0,)))
    run = h.load(plan_path).runs[0]
    path = trace_path(plan_path.parent, run)
    path.parent.mkdir(parents=True)
    target = tmp_path / "elsewhere"
    target.write_text("keep\n")
    path.symlink_to(target)
    task = _task(out / "campaign.sbatch", 0)
    assert task.returncode == 2 and "symbolic link" in task.stdout
    assert target.read_text() == "keep\n" and path.is_symlink()
    # Read as a journal is: a link is not followed, so the trace says nothing.
    assert read_trace(plan_path.parent, run) == []


def test_lines_that_are_not_this_runs_events_are_skipped(tmp_path: Path) -> None:
    plan_path, _ = h.slurm_export(tmp_path, preset(seeds=(0,)))
    run = h.load(plan_path).runs[0]
    path = trace_path(plan_path.parent, run)
    path.parent.mkdir(parents=True)
    good = {"t": 5.0, "ev": "progress", "attempt": 1, "run": run.id, "step": 3}
    path.write_text("\n".join([
        "not json", "[1]", json.dumps({**good, "run": "other"}),
        json.dumps({**good, "step": "x"}), json.dumps({**good, "ev": "stop"}),
        "[" * 10_000, json.dumps(good)]) + "\n")
    assert read_trace(plan_path.parent, run) == [good]
    path.write_text(json.dumps(good) + "\n" + " " * 70_000)
    assert read_trace(plan_path.parent, run) == []  # too long to be a task's trace
    # A trace of progress alone, or of other parameters, is no record of the run.
    r = h.cli("replan", str(plan_path))
    assert r.returncode == 2 and "no SLURM task" in r.stderr

"""Progress files: read safely, sampled at most once per interval, journalled, and shown by
`status` against the clock (`--json` and `--watch`)."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from planner.cli.watch import HOME_CLEAR, watch
from planner.planfile.export import read_plan
from planner.run.journal import Workspace, fold, read_events
from planner.run.progress import (
    EARLY_S,
    MAX_BYTES,
    Sampler,
    event_fields,
    progress_path,
    read_report,
    read_step,
)
from planner.run.status import render, summarize
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h


@pytest.mark.parametrize("content, step", [
    (b'{"step": 12}', 12), (b'{"step": 0, "loss": 1.5}', 0), (b'{"step": -1}', None),
    (b'{"step": true}', None), (b'{"step": 1.5}', None), (b'[1]', None), (b'{"ste', None),
    (b'', None), (b'\xff\xfe', None), (b'{"step": 10000000000000}', None),
    (b"[" * 100_000, None), (b'{"step": 3}' + b" " * MAX_BYTES, None),
])
def test_read_step(tmp_path: Path, content: bytes, step: int | None) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(content)
    assert read_step(path) == step


def test_links_fifos_and_folders_are_not_read(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text('{"step": 5}')
    link = tmp_path / "link.json"
    link.symlink_to(real)
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)  # a reader would block on it forever
    assert read_step(link) is None and read_step(fifo) is None
    assert read_step(tmp_path) is None and read_step(tmp_path / "none") is None


def _report(path: Path, at: float, **fields: object) -> None:
    """Write a progress file as a run would, at the given time."""
    path.write_text(json.dumps(fields))
    os.utime(path, (at, at))


def test_sampler_interval_and_changes(tmp_path: Path) -> None:
    """The first report at once, the next EARLY_S apart until two timed ones exist, then
    once a minute; a new checkpoint step at once; the file's time goes with the step."""
    plan = read_plan(h.make_plan(tmp_path / "w", preset()))
    run = plan.runs[0]
    path = progress_path(tmp_path, run)
    path.parent.mkdir(parents=True)
    s = Sampler(tmp_path, every=60.0)
    assert s.due(run, 0.0) is None  # nothing reported yet
    _report(path, T0 + 0.5, step=1, warmup=True)
    got = s.due(run, 1.0)
    assert got is not None and (got.step, got.mtime, got.warmup) == (1, T0 + 0.5, True)
    _report(path, T0 + 2.0, step=2)
    assert s.due(run, 2.0) is None  # too soon after the first
    got = s.due(run, 1.0 + EARLY_S)
    assert got is not None and got.step == 2 and not got.warmup  # the first timed one
    _report(path, T0 + 7.0, step=7)
    assert s.due(run, 7.0) is None
    assert s.due(run, 1.0 + 2 * EARLY_S).step == 7  # the second timed one: early too
    _report(path, T0 + 12.0, step=12)
    assert s.due(run, 30.0) is None  # from now on, once a minute
    _report(path, T0 + 13.0, step=13, checkpoint_step=10)
    got = s.due(run, 31.0)  # a new checkpoint step goes in at once
    assert got is not None and (got.step, got.checkpoint_step) == (13, 10)
    assert event_fields(got) == {"step": 13, "at": T0 + 13.0, "checkpoint_step": 10}
    _report(path, T0 + 40.0, step=40, checkpoint_step=10)
    assert s.due(run, 40.0) is None and s.due(run, 40.0, final=True).step == 40
    assert s.due(run, 200.0) is None  # no new step
    # The checkpoint seen at T0 + 12.5 holds at least the step reported before it.
    assert s.before(run, T0 + 12.5) == 12 and s.before(run, T0) is None
    s.forget(run)
    assert not path.exists() and s.due(run, 201.0) is None


@pytest.mark.parametrize("content, want", [
    (b'{"step": 5, "warmup": true, "checkpoint_step": 3}', (5, True, 3)),
    (b'{"step": 5, "warmup": "yes", "checkpoint_step": -3}', (5, False, None)),
    (b'{"step": 5, "checkpoint_step": true, "peak_memory_bytes": 10}', (5, False, None)),
])
def test_read_report_optional_fields(tmp_path: Path, content: bytes,
                                     want: tuple[int, bool, int | None]) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(content)
    r = read_report(path)
    assert r is not None and (r.step, r.warmup, r.checkpoint_step) == want


def test_executor_journals_progress_the_fixture_reports(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", h.preset(steps=6, seeds=(0,), variants={},
                                                     robustness=[], cards=1))
    proc = h.start(plan_path, "--progress-every", "0")
    assert proc.wait(300) == 0
    events = h.journal(plan_path.parent)
    steps = [e["step"] for e in events if e["ev"] == "progress"]
    assert steps and steps == sorted(steps) and max(steps) <= 6
    # The default interval (60 s) lets at most two samples per run through a short run:
    # the first step it reports and the last, journalled when it exits.
    wd = tmp_path / "again"
    h.copy_plan(plan_path, wd / "plan.toml")
    assert h.start(wd / "plan.toml", "--progress-every", "60").wait(300) == 0
    assert sum(e["ev"] == "progress" for e in h.journal(wd)) <= 2
    r = h.cli("run", str(plan_path), "--progress-every", "-1")
    assert r.returncode == 2 and "--progress-every" in r.stderr


def _status(tmp_path: Path, now: float):
    plan_path = h.make_plan(tmp_path / "w", preset(cards=2, window_s=60.0))
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    j = JournalWriter(plan, plan_path.parent)
    j.run(f"{cid}-baseline-s0", 0.0, 0.3, card=0)
    j.run(f"{cid}-slow-s0", 0.0, 0.6, card=1, until=4, alive=True)
    ws = Workspace(plan_path.parent)
    return plan, cid, summarize(plan, fold(read_events(ws.journal)), ws, now=now)


def test_status_against_the_clock(tmp_path: Path) -> None:
    _, cid, s = _status(tmp_path, T0 + 2.5)
    rows = {r["id"]: r for r in s["runs"]}
    slow = rows[f"{cid}-slow-s0"]
    assert slow["state"] == "running" and slow["progress"] == "reported"
    assert slow["step"] == 4 and slow["observed_s_per_step"] == pytest.approx(0.6)
    assert slow["planned_s_per_step"] == pytest.approx(0.3)
    assert slow["projected_end_h"] * 3600 == pytest.approx(2.5 + 6 * 0.6, abs=0.01)
    assert s["observed"]["slow"]["ratio"] == pytest.approx(2.0, rel=1e-3)
    assert s["capacity_left"]["card_hours"] > 0 and s["at_risk"] == s["no_longer_fit"]
    text = render(s)
    assert "Observed  baseline 0.3 s/step (1.00×) · slow 0.6 s/step (2.00×)" in text
    assert "step 4/10 (reported)" in text and "Room left" in text
    json.dumps(s)  # --json prints the same fields


def test_status_watch_redraws_in_place() -> None:
    shown = iter(["first", "second"])
    waits: list[float] = []
    out = io.StringIO()
    assert watch(lambda: next(shown), 2.0, out=out, rounds=2, wait=waits.append) == 0
    assert out.getvalue().count(HOME_CLEAR) == 2 and waits == [2.0]
    assert out.getvalue().index("first") < out.getvalue().index("second")


def test_a_slurm_task_sets_the_progress_file(tmp_path: Path) -> None:
    import subprocess

    data = h.preset(steps=6, seeds=(0,), variants={}, robustness=[], cards=1)
    plan_path, out = h.slurm_export(tmp_path, data)
    run = h.load(plan_path).runs[0]
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "7",
           "SLURM_ARRAY_JOB_ID": "7", "CUDA_VISIBLE_DEVICES": "0"}
    task = subprocess.run(["bash", str(out / "campaign.sbatch")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert task.returncode == 0, task.stdout + task.stderr
    assert read_step(progress_path(plan_path.parent, run)) == 6
    # `status` reads the task's done record: the run is done though no journal says so.
    r = h.cli("status", str(plan_path), "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"][0]["state"] == "done"

"""The SLURM export against a real controller, when one answers here (skipped otherwise;
CI starts none): a 10,000-run export checked with `--test-only`, the environment a task
really gets, and what a stop gives the run: `scancel --batch --signal=TERM` its grace, a
plain `scancel` the cluster's KillWait."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from planner.run.slurm_trace import read_trace
from tests.run_fixtures import harness as h


def _controller() -> None:
    if shutil.which("sbatch") is None:
        pytest.skip("SLURM is not installed")
    try:
        ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    except subprocess.TimeoutExpired:
        pytest.skip("no SLURM controller answers here")
    if "UP" not in ping.stdout:
        pytest.skip("no SLURM controller answers here")


def _submit(out: Path, **env: str) -> list[str]:
    proc = subprocess.run(["bash", str(out / "submit.sh")], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    assert proc.returncode == 0, proc.stderr
    return re.findall(r"as job (\d+)", proc.stdout)


def _until(done: object, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not done():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"waited {timeout:g}s for {what}"
        time.sleep(0.2)


def _gone(job: str) -> bool:
    out = subprocess.run(["squeue", "-h", "-j", job], capture_output=True, text=True).stdout
    return not out.strip()


def test_a_10000_run_export_passes_test_only(tmp_path: Path) -> None:
    _controller()
    variants = {f"lr{i}": {"lr": f"0.{i}"} for i in range(2, 11)}
    data = h.preset(seeds=tuple(range(1000)), variants=variants, robustness=[], cards=8)
    data["campaign"]["window_days"] = 30  # type: ignore[index]
    _, out = h.slurm_export(tmp_path, data)
    proc = subprocess.run(["bash", str(out / "submit.sh"), "--test-only"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    arrays = -(-10_000 // int(re.search(r"MaxArraySize\s*=\s*(\d+)", subprocess.run(
        ["scontrol", "show", "config"], capture_output=True, text=True).stdout)[1]))
    assert proc.stderr.count("to start at") == arrays, proc.stderr
    assert "too long" not in proc.stderr and "error" not in proc.stderr.lower()


def test_a_task_gets_the_stated_environment(tmp_path: Path) -> None:
    _controller()
    data = h.preset(seeds=(0,), variants={}, robustness=[],
                    command="env > {checkpoint_dir}/env.txt", shell=True)
    plan_path, out = h.slurm_export(tmp_path, data)
    run = h.load(plan_path).runs[0]
    (job,) = _submit(out, STRAY_SETTING="from-the-login-shell")
    _until(lambda: _gone(job), f"job {job}")
    seen = dict(x.split("=", 1) for x in
                (plan_path.parent / run.checkpoint_dir / "env.txt").read_text().splitlines()
                if "=" in x)
    assert "STRAY_SETTING" not in seen
    assert seen["PATH"] == os.environ["PATH"] and seen["CAMPAIGN_RUN_ID"] == run.id
    assert seen["SLURM_ARRAY_JOB_ID"] == job and "CUDA_VISIBLE_DEVICES" in seen
    assert h.done_record(plan_path.parent, run).exists()


def _killwait() -> int:
    config = subprocess.run(["scontrol", "show", "config"], capture_output=True,
                            text=True).stdout
    return int(re.search(r"KillWait\s*=\s*(\d+)", config)[1])  # type: ignore[index]


@pytest.mark.parametrize("how", ["batch", "plain"])
def test_what_a_stop_gives_the_run(tmp_path: Path, how: str) -> None:
    _controller()
    wait = _killwait()
    if wait > 10:
        pytest.skip(f"KillWait is {wait}s here: too long a test")
    # The run needs KillWait + 12 s to save its checkpoint after TERM: well past KillWait,
    # well within the task's grace, however loaded the machine.
    save = ("mkdir -p {checkpoint_dir} && (trap 'sleep SAVE_S; touch "
            "\"$CAMPAIGN_CHECKPOINT_DIR/saved\"; exit 0' TERM; touch {checkpoint_dir}/started; "
            "while :; do sleep 0.05; done) & wait").replace("SAVE_S", str(wait + 12))
    plan_path, out = h.slurm_export(tmp_path, h.preset(
        seeds=(0,), variants={}, robustness=[], command=save, shell=True), "--time", "5")
    wd, run = plan_path.parent, h.load(plan_path).runs[0]
    (job,) = _submit(out)
    _until(lambda: (wd / run.checkpoint_dir / "started").exists(), "the run to start")
    signal = ["--batch", "--signal=TERM"] if how == "batch" else []
    subprocess.run(["scancel", *signal, job], check=True, timeout=20)
    _until(lambda: _gone(job), f"job {job} to end")
    saved = (wd / run.checkpoint_dir / "saved").exists()
    exits = [e["outcome"] for e in read_trace(wd, run) if e["ev"] == "exited"]
    if how == "batch":  # the task's grace (27 s for a 5-minute limit) covers the save
        assert saved and exits == ["interrupted"]
    else:  # SLURM kills every process of the job after KillWait, whatever the task does
        assert not saved and exits == []
    assert not h.done_record(wd, run).exists()

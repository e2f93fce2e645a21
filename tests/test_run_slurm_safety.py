"""The SLURM tasks' safety: a stop is never taken for a finish, the retry budget survives a
requeue, the run's lock keeps a second task out, options and directives are checked."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from planner.errors import InputError
from planner.run.slurm_options import time_seconds, warning_seconds
from tests.run_fixtures import harness as h

# The trap is set before `started` appears, so the test's signal always meets it.
HOLD = ("trap 'exit 0' TERM && mkdir -p {checkpoint_dir} && touch {checkpoint_dir}/started "
        "&& while :; do sleep 0.05; done")


_export = h.slurm_export


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    # A stand-in scontrol records the requeue it is asked for.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "scontrol"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/scontrol.calls\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7",
            **more}


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 30
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.02)


@pytest.mark.parametrize(("sig", "code", "word"), [(signal.SIGTERM, 143, "cancelled"),
                                                   (signal.SIGUSR1, 75, "requeued")])
def test_a_run_that_exits_0_when_stopped_is_not_marked_finished(
        tmp_path: Path, sig: signal.Signals, code: int, word: str) -> None:
    plan_path, out = _export(tmp_path, h.preset(seeds=(0,), variants={}, robustness=[],
                                                command=HOLD, shell=True))
    run = h.load(plan_path).runs[0]
    wd = plan_path.parent
    task = subprocess.Popen(["bash", str(out / "campaign.sbatch")], env=_env(tmp_path),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    _wait_for(wd / run.checkpoint_dir / "started", task)
    task.send_signal(sig)
    stdout, _ = task.communicate(timeout=300)
    assert task.returncode == code and word in stdout, stdout
    assert not h.done_record(wd, run).exists()
    assert "exited with code 0" in (wd / "campaign-run" / "logs" / f"{run.id}.log").read_text()
    if sig == signal.SIGUSR1:
        assert (tmp_path / "scontrol.calls").read_text() == "requeue 7_0\n"
        assert (wd / "campaign-run" / "slurm" / f"{run.id}.tries").read_text() == "7 1\n"


def test_the_retry_budget_is_kept_across_requeues(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={"bad": {"crash": "always"}}, robustness=[],
                    max_retries=1)
    plan_path, out = _export(tmp_path, data)
    plan, wd = h.load(plan_path), plan_path.parent
    bad = next(i for i, r in enumerate(plan.runs) if r.variant == "bad")
    log = wd / "campaign-run" / "logs" / f"{plan.runs[bad].id}.log"
    # A fresh job gets max_retries + 1 attempts ...
    fresh = subprocess.run(["bash", str(out / "campaign.sbatch")], capture_output=True,
                           text=True, env=_env(tmp_path, SLURM_ARRAY_TASK_ID=str(bad)))
    assert fresh.returncode == 1 and log.read_text().count("=== ") == 2
    # ... a task requeued once already (the time limit counts as a try) gets one less.
    log.unlink()
    (wd / "campaign-run" / "slurm" / f"{plan.runs[bad].id}.tries").unlink()
    again = subprocess.run(["bash", str(out / "campaign.sbatch")], capture_output=True,
                           text=True, env=_env(tmp_path, SLURM_ARRAY_TASK_ID=str(bad),
                                               SLURM_RESTART_COUNT="1"))
    assert again.returncode == 1 and "no retries left" in again.stdout
    assert log.read_text().count("=== ") == 1


def test_a_task_whose_run_is_locked_elsewhere_does_not_run(tmp_path: Path) -> None:
    plan_path, out = _export(tmp_path, h.preset(seeds=(0,), variants={}, robustness=[]))
    run = h.load(plan_path).runs[0]
    lock = plan_path.parent / run.checkpoint_dir / f"{run.id}.lock"
    lock.parent.mkdir(parents=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)  # as an executor running it would
    try:
        task = subprocess.run(["bash", str(out / "campaign.sbatch")], capture_output=True,
                              text=True, env=_env(tmp_path))
    finally:
        os.close(fd)
    assert task.returncode == 3 and "running elsewhere" in task.stdout
    assert not h.traces(h.load(plan_path), plan_path.parent)[run.id]


def test_a_workdir_with_a_space_is_quoted_in_the_directives(tmp_path: Path) -> None:
    workdir = tmp_path / "with space"
    workdir.mkdir()  # submit.sh would make it
    plan_path, out = _export(tmp_path, h.preset(seeds=(0,), variants={}, robustness=[]),
                             "--workdir", str(workdir), "--cpus-per-task", "3",
                             "--mem", "10G")
    script = (out / "campaign.sbatch").read_text()
    assert f'#SBATCH --chdir="{workdir}"' in script
    assert f'#SBATCH --output="{workdir}/campaign-run/slurm/%x-%A_%a.out"' in script
    assert "#SBATCH --cpus-per-task=3" in script and "#SBATCH --mem=10G" in script
    task = subprocess.run(["bash", str(out / "campaign.sbatch")], capture_output=True,
                          text=True, env=_env(tmp_path))
    assert task.returncode == 0, task.stdout + task.stderr
    assert h.done_record(workdir, h.load(plan_path).runs[0]).exists()


@pytest.mark.parametrize(("text", "seconds"), [
    ("90", 5400), ("90:30", 5430), ("1:30:00", 5400), ("0-12", 43200), ("0-01:30", 5400),
    ("1-2", 93600), ("1-02:30", 95400), ("1-02:30:15", 95415)])
def test_every_slurm_time_form_is_read(text: str, seconds: int) -> None:
    assert time_seconds(text) == seconds


def test_the_warning_comes_long_enough_before_the_limit() -> None:
    assert warning_seconds(time_seconds("0-12")) == 300  # not 72: 12 is hours here
    assert warning_seconds(time_seconds("0-01:30")) == 300
    assert warning_seconds(time_seconds("5")) == 30
    assert warning_seconds(time_seconds("0:20")) == 10  # never longer than half the limit


@pytest.mark.parametrize("option", [
    ("--time", "soon"), ("--time", "0"), ("--time", "1-"), ("--time", "1:2:3:4"),
    ("--time", "9" * 5000), ("--cpus-per-task", "0"), ("--cpus-per-task", "99999"),
    ("--mem", "lots"), ("--mem", "0"), ("--partition", "a b"), ("--throttle", "0"),
    ("--workdir", '/tmp/a"b'), ("--workdir", "/tmp/100%")])
def test_bad_options_are_refused_before_anything_is_written(tmp_path: Path,
                                                            option: tuple[str, str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), variants={}, robustness=[]))
    out = tmp_path / "slurm"
    proc = h.cli("slurm", str(plan_path), "--out", str(out), *option)
    assert proc.returncode == 2 and option[0] in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not out.exists()


def test_time_errors_name_the_option() -> None:
    with pytest.raises(InputError, match="--time"):
        time_seconds("12:00:00:00")

"""SLURM tasks and the run's done record: read again once the lock is held, shared with
`run` both ways; the stop's grace follows the warning time; no write through a link."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from planner.run.slurm_trace import read_trace
from tests.run_fixtures import harness as h


def _env(tmp_path: Path, **more: str) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    fake = bin_dir / "scontrol"
    fake.write_text(f"#!/bin/sh\necho \"$@\" >> {tmp_path}/scontrol.calls\n")
    fake.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "7", "SLURM_ARRAY_JOB_ID": "7",
            **more}


def _task(out: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(out / "campaign.sbatch")], env=env,
                          capture_output=True, text=True, timeout=300)


def _one(tmp_path: Path, **preset: object) -> tuple[Path, Path]:
    return h.slurm_export(tmp_path, h.preset(seeds=(0,), variants={}, robustness=[],
                                             **preset))  # type: ignore[arg-type]


def test_a_run_finished_while_the_lock_was_slow_is_not_run_again(tmp_path: Path) -> None:
    plan_path, out = _one(tmp_path)
    wd, run = plan_path.parent, h.load(plan_path).runs[0]
    # Another task finishes the run while this one waits for its lock (a loaded shared
    # filesystem): a stand-in flock writes that task's done record, then locks.
    first = _task(out, _env(tmp_path, SLURM_JOB_ID="6", SLURM_ARRAY_JOB_ID="6"))
    assert first.returncode == 0, first.stdout
    record = h.done_record(wd, run)
    saved = record.read_bytes()
    record.unlink()
    real = shutil.which("flock")
    assert real
    slow = tmp_path / "bin" / "flock"
    slow.parent.mkdir(exist_ok=True)
    slow.write_text(f"#!/bin/sh\nprintf '%s' '{saved.decode().strip()}' > {record}\n"
                    f"exec {real} \"$@\"\n")
    slow.chmod(0o755)
    second = _task(out, _env(tmp_path))
    assert second.returncode == 0 and "finished before: not run again" in second.stdout
    starts = [e for e in h.traces(h.load(plan_path), wd)[run.id] if e["ev"] == "start"]
    assert len(starts) == 1


def test_runs_finished_by_run_are_done_for_slurm_and_the_reverse(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0,), robustness=[]))
    plan, wd = h.load(plan_path), plan_path.parent
    assert _task(out, _env(tmp_path)).returncode == 0  # the first run, by SLURM
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.count("finished before") == 1
    again = _task(out, _env(tmp_path, SLURM_ARRAY_TASK_ID="1"))  # the second, by `run`
    assert again.returncode == 0 and "not run again" in again.stdout
    for run_id, trace in h.traces(plan, wd).items():
        assert len([e for e in trace if e["ev"] == "start"]) == 1, run_id


# The shell leads; a process of the run traps TERM and needs 2 s to save, past the linger.
# The trap's script names the folder through the environment: a placeholder may not stand
# in the arguments of `trap`.
SLOW_SAVE = ("mkdir -p {checkpoint_dir} && (trap 'sleep 2; "
             "touch \"$CAMPAIGN_CHECKPOINT_DIR/saved\"; exit 0' TERM; "
             "touch {checkpoint_dir}/started; while :; do sleep 0.05; done) "
             "& wait")


def test_the_grace_after_a_stop_follows_the_warning_time(tmp_path: Path) -> None:
    # --time 0:20 warns 10 s before the limit: the run gets 9 s to save, not the linger.
    plan_path, out = h.slurm_export(tmp_path, h.preset(
        seeds=(0,), variants={}, robustness=[], command=SLOW_SAVE, shell=True), "--time",
        "0:20")
    script = (out / "campaign.sbatch").read_text()
    assert "#SBATCH --signal=B:USR1@10" in script and "\nWARN_DEFAULT=10 " in script
    wd, run = plan_path.parent, h.load(plan_path).runs[0]
    task = subprocess.Popen(["bash", str(out / "campaign.sbatch")],
                            env=_env(tmp_path, CAMPAIGN_LINGER_S="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (wd / run.checkpoint_dir / "started").exists():
        assert task.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    task.send_signal(signal.SIGUSR1)
    stdout, _ = task.communicate(timeout=300)
    assert task.returncode == 75 and "has 9s to write its checkpoint" in stdout, stdout
    assert (wd / run.checkpoint_dir / "saved").exists(), "killed before it had saved"
    assert (tmp_path / "scontrol.calls").read_text() == "requeue 7_0\n"
    assert not h.done_record(wd, run).exists()


def test_a_term_to_the_batch_shell_gives_the_run_its_grace(tmp_path: Path) -> None:
    # `scancel --batch --signal=TERM` signals the batch shell alone: the task stops the
    # run with TERM and waits for it to save (9 s here, from a warning of 10 s), records
    # the attempt's exit in the run's trace, and the run is interrupted, not finished.
    plan_path, out = h.slurm_export(tmp_path, h.preset(
        seeds=(0,), variants={}, robustness=[], command=SLOW_SAVE, shell=True))
    wd, run = plan_path.parent, h.load(plan_path).runs[0]
    task = subprocess.Popen(["bash", str(out / "campaign.sbatch"), "0", "10"],
                            env=_env(tmp_path, CAMPAIGN_LINGER_S="1"),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    while not (wd / run.checkpoint_dir / "started").exists():
        assert task.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    task.send_signal(signal.SIGTERM)
    stdout, _ = task.communicate(timeout=300)
    assert task.returncode == 143 and "has 9s to write its checkpoint" in stdout, stdout
    assert "cancelled: not finished" in stdout
    assert (wd / run.checkpoint_dir / "saved").exists(), "killed before it had saved"
    exits = [e for e in read_trace(wd, run) if e["ev"] == "exited"]
    assert [e["outcome"] for e in exits] == ["interrupted"]
    assert not h.done_record(wd, run).exists()


@pytest.mark.parametrize("where", ["log", "lock", "done", "tries", "logs-folder"])
def test_a_task_refuses_a_link_and_writes_nothing_through_it(tmp_path: Path,
                                                            where: str) -> None:
    plan_path, out = _one(tmp_path)
    wd, run = plan_path.parent, h.load(plan_path).runs[0]
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    rundir = wd / "campaign-run"
    paths = {"log": rundir / "logs" / f"{run.id}.log",
             "lock": wd / run.checkpoint_dir / f"{run.id}.lock",
             "done": h.done_record(wd, run),
             "tries": rundir / "slurm" / f"{run.id}.tries",
             "logs-folder": rundir / "logs"}
    link = paths[where]
    link.parent.mkdir(parents=True, exist_ok=True)
    target = tmp_path if where == "logs-folder" else victim
    link.symlink_to(target)
    task = _task(out, _env(tmp_path))
    assert task.returncode == 2, task.stdout + task.stderr
    assert f"refused: {link} is a symbolic link" in task.stdout
    assert victim.read_text() == "precious\n" and link.is_symlink()
    assert not h.traces(h.load(plan_path), wd)[run.id]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["bin", "p", "slurm", "victim.txt"])

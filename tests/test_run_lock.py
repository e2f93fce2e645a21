"""The per-run lock beside a run's checkpoints: with an absolute checkpoint root shared by
two working directories, two executors (or an executor and a SLURM task) never run one run
at once."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from tests.run_fixtures import harness as h

GATED = ("mkdir -p {checkpoint_dir} && echo begin >> {checkpoint_dir}/trace && "
         "while [ ! -e {checkpoint_dir}/release ]; do sleep 0.02; done && "
         "echo end >> {checkpoint_dir}/trace")


def _wait(predicate: Callable[[], bool], *procs: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not predicate():
        for p in procs:
            assert p.poll() is None, f"exited early with {p.returncode}"
        assert time.monotonic() < deadline
        time.sleep(0.02)


def _plans(tmp_path: Path) -> tuple[Path, Path, Path]:
    data = h.preset(seeds=(0,), variants={}, robustness=[], cards=1, command=GATED,
                    shell=True)
    shared = tmp_path / "data-disk" / "checkpoints"
    data["ablation"]["checkpoint_root"] = str(shared)  # type: ignore[index]
    return h.make_plan(tmp_path / "one", data), h.make_plan(tmp_path / "two", data), shared


def test_two_executors_never_run_one_run_at_once(tmp_path: Path) -> None:
    one, two, _ = _plans(tmp_path)
    run = h.load(one).runs[0]
    ckpt = Path(run.checkpoint_dir)
    first = h.start(one, out=tmp_path / "one.out")
    _wait(lambda: (ckpt / "trace").exists(), first)
    second = h.start(two, out=tmp_path / "two.out")
    _wait(lambda: "running elsewhere" in (tmp_path / "two.out").read_text(), first, second)
    (ckpt / "release").touch()
    assert first.wait(300) == 0 and second.wait(300) == 0
    # The second found it done once the first had ended, and did not run it again.
    assert (ckpt / "trace").read_text() == "begin\nend\n"
    assert "finished before" in (tmp_path / "two.out").read_text()


def test_a_slurm_task_stays_out_of_a_run_an_executor_runs(tmp_path: Path) -> None:
    one, two, _ = _plans(tmp_path)
    run = h.load(one).runs[0]
    ckpt = Path(run.checkpoint_dir)
    out = tmp_path / "slurm"
    assert h.cli("slurm", str(two), "--out", str(out)).returncode == 0
    executor = h.start(one, out=tmp_path / "one.out")
    try:
        _wait(lambda: (ckpt / "trace").exists(), executor)
        env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "1",
               "SLURM_ARRAY_JOB_ID": "1"}
        task = subprocess.run(["bash", str(out / "campaign.sbatch")], env=env,
                              capture_output=True, text=True, timeout=300)
        assert task.returncode == 3 and "running elsewhere" in task.stdout
    finally:
        (ckpt / "release").touch()
    assert executor.wait(300) == 0
    assert (ckpt / "trace").read_text() == "begin\nend\n"

"""The SLURM export: its files, and its array tasks run the way SLURM would run them (one
process per task with SLURM_ARRAY_TASK_ID set), so no SLURM is needed to test them."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.run_fixtures import harness as h

_export = h.slurm_export


def _task(script: Path, index: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": str(index), "SLURM_JOB_ID": "42",
           "SLURM_ARRAY_JOB_ID": "42", "CUDA_VISIBLE_DEVICES": "0"}
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_export_files_and_options(tmp_path: Path) -> None:
    plan_path, out = _export(tmp_path, h.preset(), "--partition", "gpu")
    plan = h.load(plan_path)
    main = (out / "campaign.sbatch").read_text()
    evals = (out / "robustness.sbatch").read_text()
    assert "#SBATCH --array" not in main + evals  # submit.sh gives each array its share
    assert "#SBATCH --gres=gpu:1" in main and "#SBATCH --partition=gpu" in main
    assert f'#SBATCH --chdir="{plan_path.parent}"' in main and "#SBATCH --requeue" in main
    # The a6000 has no host figures in the catalog: 4 CPUs and 12G a card.
    assert "#SBATCH --cpus-per-task=4" in main and "#SBATCH --mem=12G" in main
    submit = (out / "submit.sh").read_text()
    assert '--dependency="aftercorr:$job"' in submit
    assert "EVAL_CLASSES=(0 - 0 -)" in submit  # tasks 0 and 2 have evaluations
    assert len(list((out / "manifests").iterdir())) == len(plan.runs)
    for name in ("campaign.sbatch", "robustness.sbatch", "submit.sh"):
        assert subprocess.run(["bash", "-n", str(out / name)]).returncode == 0
        assert os.access(out / name, os.X_OK)
    again = h.cli("slurm", str(plan_path), "--out", str(out))
    assert again.returncode == 2 and "already exists; pass --force" in again.stderr
    assert h.cli("slurm", str(plan_path), "--out", str(out), "--force").returncode == 0
    bad = h.cli("slurm", str(plan_path), "--out", str(out), "--force", "--time", "soon")
    assert bad.returncode == 2 and "--time" in bad.stderr


def test_tasks_run_resume_retry_and_skip_like_the_executor(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={"flaky": {"crash": "once"}},
                    robustness=["baseline", "flaky"])
    plan_path, out = _export(tmp_path, data)
    plan, wd = h.load(plan_path), plan_path.parent
    train = [r for r in plan.runs if not r.depends_on]
    evals = [r for r in plan.runs if r.depends_on]
    # An evaluation whose run has not finished refuses to start.
    early = _task(out / "robustness.sbatch", next(i for i, r in enumerate(train)
                                                  if r.id == evals[0].depends_on))
    assert early.returncode == 3 and "has not finished" in early.stdout
    for i, run in enumerate(train):
        done = _task(out / "campaign.sbatch", i)
        assert done.returncode == 0, done.stdout + done.stderr
        assert h.done_record(wd, run).exists()
        assert h.exports(plan, wd)[run.id]["state"] == h.expected(run)
        assert (wd / run.checkpoint_dir / f"{run.id}.manifest.toml").read_text() == \
            (out / "manifests" / f"{run.id}.manifest.toml").read_text()
    flaky = next(r for r in train if r.variant == "flaky")
    starts = [e for e in h.traces(plan, wd)[flaky.id] if e["ev"] == "start"]
    assert [(s["step"], s["attempt"]) for s in starts] == [(0, 1), (15, 2)]
    log = (wd / "campaign-run" / "logs" / f"{flaky.id}.log").read_text()
    assert "attempt 1 exited with code 3" in log and "CUDA_VISIBLE_DEVICES=0" in log
    # Task k of the evaluations runs those of training task k, and only those.
    for i in range(len(train)):
        task = _task(out / "robustness.sbatch", i)
        assert task.returncode == 0, task.stdout
        for e in evals:
            assert h.done_record(wd, e).exists() == (e.depends_on in
                                                      [r.id for r in train[:i + 1]])
    # Submitted again, nothing runs again.
    again = _task(out / "campaign.sbatch", 0)
    assert again.returncode == 0 and "not run again" in again.stdout
    assert len([e for e in h.traces(plan, wd)[train[0].id] if e["ev"] == "start"]) == 1


def test_a_task_with_other_parameters_is_refused(tmp_path: Path) -> None:
    plan_path, out = _export(tmp_path, h.preset(seeds=(0,), robustness=[]))
    run = h.load(plan_path).runs[0]
    manifest = plan_path.parent / run.checkpoint_dir / f"{run.id}.manifest.toml"
    manifest.parent.mkdir(parents=True)
    manifest.write_text('fingerprint = "0000"\n')
    refused = _task(out / "campaign.sbatch", 0)
    assert refused.returncode == 2 and "other parameters" in refused.stdout
    assert not (plan_path.parent / run.export_name).parent.joinpath(f"{run.id}.json").exists()


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="SLURM is not installed")
def test_sbatch_accepts_the_script(tmp_path: Path) -> None:
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    if "UP" not in ping.stdout:
        pytest.skip("no SLURM controller answers here")
    _, out = _export(tmp_path, h.preset(seeds=(0,)))
    proc = subprocess.run(["sbatch", "--test-only", str(out / "campaign.sbatch")],
                          capture_output=True, text=True, timeout=20)
    assert proc.returncode == 0 and "to start at" in proc.stderr, proc.stderr

"""Done markers of SLURM exports made before the done record (`campaign-run/done/<run id>`,
no parameters in it) still keep a finished run from running again, for the SLURM task,
`run` and `status` alike, when the run's manifest records its present parameters; a
marker without that manifest proves nothing."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from planner.planfile.plan import Run
from planner.run.params import manifest_text
from tests.run_fixtures import harness as h


def _env(**more: str) -> dict[str, str]:
    return {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "7",
            "SLURM_ARRAY_JOB_ID": "7", **more}


def _task(out: Path, script: str = "campaign.sbatch") -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(out / script)], env=_env(), capture_output=True,
                          text=True, timeout=300)


def _earlier_export_finished(workdir: Path, run: Run, *, manifest: str | None) -> None:
    """What a task of the earlier export left once the run's command exited 0."""
    marker = workdir / "campaign-run" / "done" / run.id
    marker.parent.mkdir(parents=True, exist_ok=True)
    marker.write_text("2026-01-01 00:00:00  job 5\n")
    if manifest is not None:
        folder = workdir / run.checkpoint_dir
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{run.id}.manifest.toml").write_text(manifest)


def _starts(plan_path: Path) -> int:
    traces = h.traces(h.load(plan_path), plan_path.parent)
    return sum(1 for trace in traces.values() for e in trace if e["ev"] == "start")


def test_an_earlier_exports_marker_keeps_the_run_from_running_again(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0,), variants={},
                                                       robustness=[]))
    train = h.load(plan_path).runs[0]
    _earlier_export_finished(plan_path.parent, train, manifest=manifest_text(train))
    task = _task(out)
    assert task.returncode == 0, task.stdout + task.stderr
    assert f"{train.id} finished before: not run again" in task.stdout
    status = h.cli("status", str(plan_path))
    assert status.returncode == 0 and "1 done" in status.stdout, status.stdout
    dry = h.cli("run", "--dry-run", str(plan_path))
    assert "done elsewhere" in dry.stdout and train.id in dry.stdout
    ran = h.cli("run", str(plan_path), "--poll", "0.02")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert f"{train.id} finished before (an earlier SLURM export's marker (job 5))" \
        in ran.stdout
    assert _starts(plan_path) == 0


def test_a_marker_without_the_runs_manifest_proves_nothing(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0,), variants={},
                                                       robustness=[]))
    train = h.load(plan_path).runs[0]
    _earlier_export_finished(plan_path.parent, train, manifest=None)
    assert "0 done" in h.cli("status", str(plan_path)).stdout
    task = _task(out)
    assert task.returncode == 0 and "finished before" not in task.stdout, task.stdout
    assert _starts(plan_path) == 1


def test_a_marker_of_other_parameters_is_not_read_as_done(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0,), variants={},
                                                       robustness=[]))
    train = h.load(plan_path).runs[0]
    other = manifest_text(train.model_copy(update={"steps": train.steps + 1}))
    _earlier_export_finished(plan_path.parent, train, manifest=other)
    assert "0 done" in h.cli("status", str(plan_path)).stdout
    task = _task(out)
    # Not done: the checkpoints' manifest of other parameters refuses the relaunch.
    assert task.returncode != 0 and "other parameters" in task.stdout, task.stdout
    assert _starts(plan_path) == 0


def test_an_evaluation_of_a_run_an_earlier_export_finished_goes_ahead(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0,), variants={}))
    train = next(r for r in h.load(plan_path).runs if r.kind == "train")
    before = _task(out, "robustness.sbatch")
    assert before.returncode == 3 and "which has not finished: not run" in before.stdout
    _earlier_export_finished(plan_path.parent, train, manifest=manifest_text(train))
    after = _task(out, "robustness.sbatch")
    assert "which has not finished" not in after.stdout, after.stdout

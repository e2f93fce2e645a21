"""Runs named for W&B, MLflow and TensorBoard: set for each training run by `run` and by
the SLURM task, left alone where the user's environment sets them, never set when the
preset turns it off."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

from planner.hooks import env
from planner.planfile.plan import Plan, Run
from planner.run.procs import run_env
from planner.run.slurm_task import FUNCTIONS
from planner.run.tracking import TRACKED, tracking_env
from tests.run_fixtures import harness as h

DUMP = f"{h.PY} {Path(__file__).parent / 'hooks_scripts' / 'env_dump.py'}"


def _plan(tmp_path: Path, tracking: bool | None = None) -> Path:
    data = h.preset(seeds=(0,), cards=1, command=DUMP, robustness=[])
    if tracking is not None:
        data["ablation"]["tracking"] = tracking
    return h.make_plan(tmp_path / "p", data)


def _seen(wd: Path, run: Run) -> dict[str, str | None]:
    """The tracking variables the run's last start saw."""
    lines = (wd / run.checkpoint_dir / "starts.jsonl").read_text().splitlines()
    tracking: dict[str, str | None] = json.loads(lines[-1])["tracking"]
    return tracking


def _expected(plan: Plan, wd: Path, run: Run) -> dict[str, str]:
    return {"WANDB_RUN_GROUP": plan.campaign.id, "WANDB_NAME": run.id, "WANDB_RUN_ID": run.id,
            "WANDB_RESUME": "allow", "MLFLOW_EXPERIMENT_NAME": plan.campaign.id,
            "MLFLOW_TAGS": json.dumps({"mlflow.runName": run.id}),
            "TENSORBOARD_LOGGING_DIR": str(wd / run.checkpoint_dir / "tensorboard" / run.id)}


def _clean_env(**more: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if k not in TRACKED}
    return {**base, **more}


def _run(plan_path: Path, **more: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "planner", "run", str(plan_path), "--poll",
                           "0.02"], env=_clean_env(**more), capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_run_names_each_run_and_leaves_the_users_variables(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path)
    plan, wd = h.load(plan_path), plan_path.parent
    assert plan.campaign.tracking and "tracking" not in plan_path.read_text()
    _run(plan_path, MLFLOW_EXPERIMENT_NAME="mine", WANDB_RESUME="")
    for run in plan.runs:
        want = {**_expected(plan, wd, run), "MLFLOW_EXPERIMENT_NAME": "mine", "WANDB_RESUME": ""}
        assert _seen(wd, run) == want


def test_a_preset_turns_it_off_for_run_and_slurm(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path, tracking=False)
    plan, wd = h.load(plan_path), plan_path.parent
    assert plan.campaign.tracking is False and "tracking = false" in plan_path.read_text()
    # How runs are named is no part of the campaign: its id does not change.
    assert plan.campaign.id == h.load(_plan(tmp_path / "on")).campaign.id
    _run(plan_path)
    assert all(v is None for run in plan.runs for v in _seen(wd, run).values())
    slurm_plan = _plan(tmp_path / "slurm", tracking=False)
    out = tmp_path / "slurm" / "out"
    assert h.cli("slurm", str(slurm_plan), "--out", str(out)).returncode == 0
    assert "TRACKING=0" in (out / "campaign.sbatch").read_text()
    for i, run in enumerate(plan.runs):
        task = _slurm_task(out / "campaign.sbatch", i)
        assert task.returncode == 0, task.stdout + task.stderr
        assert all(v is None for v in _seen(slurm_plan.parent, run).values())


def _slurm_task(script: Path, index: int, **more: str) -> subprocess.CompletedProcess[str]:
    env = _clean_env(SLURM_ARRAY_TASK_ID=str(index), SLURM_JOB_ID="42",
                     SLURM_ARRAY_JOB_ID="42", CUDA_VISIBLE_DEVICES="0", **more)
    return subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True,
                          timeout=300)


def test_a_slurm_task_names_its_runs_as_run_does(tmp_path: Path) -> None:
    plan_path = _plan(tmp_path)
    plan, wd = h.load(plan_path), plan_path.parent
    out = tmp_path / "slurm"
    assert h.cli("slurm", str(plan_path), "--out", str(out)).returncode == 0
    for i, run in enumerate(plan.runs):
        task = _slurm_task(out / "campaign.sbatch", i, WANDB_NAME="users")
        assert task.returncode == 0, task.stdout + task.stderr
        assert _seen(wd, run) == {**_expected(plan, wd, run), "WANDB_NAME": "users"}


def test_the_slurm_task_sets_the_variables_run_sets() -> None:
    listed = re.search(r"for v in (.*?); do", FUNCTIONS, re.DOTALL)
    assert listed is not None
    assert tuple(listed.group(1).replace("\\\n", " ").split()) == TRACKED
    assert tuple(re.findall(r"track (\w+) ", FUNCTIONS)) == TRACKED


def test_run_env_sets_the_contract_and_tracking_only_where_asked(tmp_path: Path) -> None:
    plan = h.load(_plan(tmp_path))
    run = plan.runs[0]
    on = run_env(run, tmp_path, [0], 1, tmp_path / "plan.toml", plan.campaign.id)
    off = run_env(run, tmp_path, [0], 1, tmp_path / "plan.toml", plan.campaign.id,
                  tracking=False)
    names = [getattr(env, n) for n in dir(env) if n.isupper() and not n.startswith("TRIAL")
             and getattr(env, n).startswith("CAMPAIGN_")]
    assert set(names) <= set(on) and set(names) <= set(off)
    assert set(TRACKED) <= set(on) and not set(TRACKED) & (set(off) - set(os.environ))
    embed = run.model_copy(update={"kind": "embed"})
    assert tracking_env(embed, tmp_path, plan.campaign.id, {}) == {}
    assert set(tracking_env(run, tmp_path, "c", {"WANDB_NAME": ""})) == set(TRACKED) - {
        "WANDB_NAME"}


def test_a_trial_is_not_named_as_the_run(tmp_path: Path) -> None:
    from planner.run.trial import Budget, trial_env

    plan = h.load(_plan(tmp_path))
    got = trial_env(plan.runs[0], tmp_path / "scratch", [0], plan.campaign.id, Budget(steps=3))
    assert not {k for k in TRACKED if got.get(k) != os.environ.get(k)}

"""The trainer callbacks end to end, on CPU with the real libraries: a Hugging Face
Trainer script (a tiny Llama from its config, random weights, nothing downloaded) and a
Lightning script, each trialled (`campaign-planner trial`), planned from the measurements
the trial wrote, and run with `campaign-planner run`; the campaign is killed with SIGKILL
once a run has a checkpoint, then run again.

Each resumes at the global step of its last checkpoint, the run that had finished does
not run again, `status` shows the observed step time, the W&B / MLflow / TensorBoard names
reach each run (a variable the user set kept as the user set it), and the same script told
to ignore the resume path stops with an error instead of training again from step 0.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tomli_w

from planner.cli.main import main as planner_main
from planner.figures.measurements import load_measurements
from tests.run_fixtures import harness as h

SCRIPTS = Path(__file__).parent / "hooks_scripts"
STEPS, SAVE_EVERY = 7, 4


def _env(**more: str) -> dict[str, str]:
    return {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
            "PYTHONWARNINGS": "ignore", **more}


def _start(plan: Path, out: Path, **env: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "planner", "run", str(plan), "--poll", "0.05", "--grace", "5",
         "--progress-every", "0"],
        stdout=open(out, "ab"), stderr=subprocess.STDOUT, env=_env(**env))


def _progress(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _wait_for_checkpoint(path: Path, executor: subprocess.Popen[bytes], log: Path) -> int:
    """The checkpoint step the progress file reports, once it reports one."""
    deadline = time.monotonic() + 300
    while (step := _progress(path).get("checkpoint_step")) is None:
        assert executor.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.05)
    return step


def _kill_everything(executor: subprocess.Popen[bytes], workdir: Path) -> None:
    executor.send_signal(signal.SIGKILL)
    executor.wait()
    deadline = time.monotonic() + 30
    while pids := h.campaign_pids(workdir):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert time.monotonic() < deadline, f"processes left: {pids}"
        time.sleep(0.02)


def _starts(workdir: Path, run: h.Run) -> list[dict[str, object]]:
    path = workdir / run.checkpoint_dir / "starts.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


@pytest.mark.parametrize("script", ["hf_train.py", "lightning_train.py"])
def test_killed_mid_run_each_trainer_resumes_at_its_checkpoint(tmp_path: Path,
                                                               script: str) -> None:
    gate = tmp_path / "gate"
    command = (f"{h.PY} {SCRIPTS / script} --steps {{steps}} --save-every {SAVE_EVERY} "
               f"--gate {gate} --gate-seed 1 --step-seconds 0.2")
    data = h.preset(steps=STEPS, seeds=(0, 1), cards=1, command=command, variants={},
                    robustness=[])
    data["overheads"]["startup_minutes"] = 0.0
    wd = tmp_path / "p"
    wd.mkdir()
    preset = wd / "preset.toml"
    preset.write_text(tomli_w.dumps(data))

    # Trialled first: its step times, from the callback's reports, become the plan's.
    measured = wd / "measurements.toml"
    trial = subprocess.run(
        [sys.executable, "-m", "planner", "trial", "--preset", str(preset), "--steps", "3",
         "--warmup", "1", "--device", "cpu", "--workdir", str(wd), "--grace", "5",
         "--out", str(measured)], env=_env(), capture_output=True, text=True, timeout=300)
    assert trial.returncode == 0, trial.stdout + trial.stderr
    m = load_measurements(measured)
    (config,) = m.configs
    assert config.outcome == "measured" and config.step_time is not None
    assert config.step_time.steps >= 3 and config.step_time.median_s >= 0.2
    assert not list(wd.glob("trial-*")) and not (wd / "checkpoints").exists()
    with contextlib.redirect_stdout(io.StringIO()):
        assert planner_main(["--preset", str(preset), "--out", str(wd), "--created",
                             "2026-01-01T00:00:00", "--measurements", str(measured),
                             "--use-cpu-step-times"]) == 0
    plan_path = wd / "plan.toml"
    plan = h.load(plan_path)
    assert plan.assumptions.figures[0].step_time_s.label().endswith("(trial of the command)")
    first, second = plan.runs
    log = tmp_path / "executor.out"

    executor = _start(plan_path, log)
    checkpoint = _wait_for_checkpoint(wd / second.checkpoint_dir / f"{second.id}.progress.json",
                                      executor, log)
    assert checkpoint == SAVE_EVERY
    _kill_everything(executor, wd)  # a crash: the executor and every process of the runs
    gate.touch()
    again = _start(plan_path, log, WANDB_NAME="named-by-the-user")
    assert again.wait(300) == 0, log.read_text()

    # The killed run resumed at its checkpoint's global step, not at 0.
    starts = _starts(wd, second)
    assert [s["start"] for s in starts] == [0, checkpoint], starts
    assert [s["attempt"] for s in starts] == ["1", "2"]
    assert _progress(wd / second.checkpoint_dir / f"{second.id}.progress.json")["step"] == STEPS
    # The finished run did not run again.
    assert [s["start"] for s in _starts(wd, first)] == [0]
    events = h.journal(wd)
    for run in plan.runs:
        finished = [e for e in events if e.get("run") == run.id and e["ev"] == "exited"
                    and e["outcome"] == "finished"]
        assert len(finished) == 1
        assert not [e for e in events if e.get("run") == run.id and e["ev"] == "started"
                    and e["attempt"] > finished[0]["attempt"]]
    # The resume path holds the latest checkpoint (a link to the Trainer's folder).
    resume = wd / second.resume
    assert resume.exists() and (resume.is_symlink() == (script == "hf_train.py"))

    # Named for the trackers; the variable the user set is the user's.
    for run, start in ((first, _starts(wd, first)[0]), (second, starts[1])):
        t = start["tracking"]
        assert t["WANDB_RUN_GROUP"] == plan.campaign.id == t["MLFLOW_EXPERIMENT_NAME"]
        assert t["WANDB_RUN_ID"] == run.id and t["WANDB_RESUME"] == "allow"
        assert json.loads(t["MLFLOW_TAGS"]) == {"mlflow.runName": run.id}
        assert t["TENSORBOARD_LOGGING_DIR"] == str(wd / run.checkpoint_dir / "tensorboard"
                                                   / run.id)
    assert starts[0]["tracking"]["WANDB_NAME"] == second.id
    assert starts[1]["tracking"]["WANDB_NAME"] == "named-by-the-user"

    status = h.cli("status", str(plan_path), "--json")
    assert status.returncode == 0, status.stderr
    observed = json.loads(status.stdout)["observed"]["baseline"]
    assert observed["source"] == "observed" and observed["seconds_per_step"] > 0

    # The same script, told to ignore the resume path, is an error, not a restart from 0.
    env = _env(CAMPAIGN_RUN_ID=second.id, CAMPAIGN_SEED="1",
               CAMPAIGN_CHECKPOINT_DIR=str(wd / second.checkpoint_dir),
               CAMPAIGN_RESUME=str(resume), CAMPAIGN_RESUME_PATH=str(resume),
               CAMPAIGN_PROGRESS=str(tmp_path / "ignored.progress.json"))
    ignored = subprocess.run([sys.executable, str(SCRIPTS / script), "--steps", str(STEPS + 2),
                              "--ignore-resume"], cwd=wd, env=env, capture_output=True,
                             text=True, timeout=300)
    assert ignored.returncode != 0
    assert "training starts from step 0" in ignored.stderr
    assert not (tmp_path / "ignored.progress.json").exists()

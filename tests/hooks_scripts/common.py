"""What the test scripts share: their arguments, the trace of where each start began, and
the gate that holds a run after its first checkpoint until the test opens it."""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path


def args() -> argparse.Namespace:
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--save-every", type=int, default=5)
    p.add_argument("--gate", default="", help="held after the first checkpoint until it exists")
    p.add_argument("--gate-seed", default="", help="the seed the gate holds (others run on)")
    p.add_argument("--ignore-resume", action="store_true")
    p.add_argument("--step-seconds", type=float, default=0.0,
                   help="each step takes at least this long (a trial reads every 0.1 s)")
    return p.parse_args()


def trace(**fields: object) -> None:
    """One line in `<checkpoint folder>/starts.jsonl`, with the run's id and attempt."""
    folder = os.environ.get("CAMPAIGN_CHECKPOINT_DIR")
    if not folder:
        return
    line = {"run": os.environ.get("CAMPAIGN_RUN_ID"),
            "attempt": os.environ.get("CAMPAIGN_ATTEMPT"),
            "tracking": {k: os.environ.get(k) for k in (
                "WANDB_RUN_GROUP", "WANDB_NAME", "WANDB_RUN_ID", "WANDB_RESUME",
                "MLFLOW_EXPERIMENT_NAME", "MLFLOW_TAGS", "TENSORBOARD_LOGGING_DIR")},
            **fields}
    with open(Path(folder) / "starts.jsonl", "a") as fh:
        fh.write(json.dumps(line) + "\n")


def hold(a: argparse.Namespace, step: int) -> None:
    """Pace the step; wait at `step` past the first checkpoint while the gate is shut (its
    file missing)."""
    time.sleep(a.step_seconds)
    if not a.gate or step <= a.save_every or os.environ.get("CAMPAIGN_SEED") != a.gate_seed:
        return
    while not Path(a.gate).exists():
        time.sleep(0.05)

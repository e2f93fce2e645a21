"""Runs named in the tools people watch them in: W&B, MLflow and TensorBoard, through the
environment variables each documents, set by `run` (and, in bash, by the SLURM task).

- W&B: the group is the campaign, the run's name and id are the run id, and a relaunch
  resumes the same W&B run (`WANDB_RESUME=allow`: resumed when it exists, made when not).
- MLflow: the experiment is the campaign (`MLFLOW_EXPERIMENT_NAME`). MLflow reads no
  variable for a run's name; `MLFLOW_TAGS` carries it as the `mlflow.runName` tag, which
  the Hugging Face Trainer's MLflow integration sets on the run it starts.
- TensorBoard: `TENSORBOARD_LOGGING_DIR`, which the Hugging Face Trainer writes its
  events to, is `<checkpoint folder>/tensorboard/<run id>` (an evaluation shares its run's
  folder, hence the run id).

A variable the user's own environment sets is left as it is, and a preset's
`tracking = false` sets none. Embedding shards are not named: they are not training runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from planner.planfile.plan import Run

TRACKED = ("WANDB_RUN_GROUP", "WANDB_NAME", "WANDB_RUN_ID", "WANDB_RESUME",
           "MLFLOW_EXPERIMENT_NAME", "MLFLOW_TAGS", "TENSORBOARD_LOGGING_DIR")
"""Every variable set, in the order the SLURM task sets them too."""


def tensorboard_dir(workdir: Path, run: Run) -> Path:
    """The run's TensorBoard log folder, under its checkpoint folder."""
    return workdir / run.checkpoint_dir / "tensorboard" / run.id


def tracking_env(run: Run, workdir: Path, campaign_id: str,
                 environ: Mapping[str, str]) -> dict[str, str]:
    """The tracking variables to add to the run's environment: those `environ` (the
    user's) does not already set."""
    if run.kind == "embed":
        return {}
    wanted = {
        "WANDB_RUN_GROUP": campaign_id,
        "WANDB_NAME": run.id,
        "WANDB_RUN_ID": run.id,
        "WANDB_RESUME": "allow",
        "MLFLOW_EXPERIMENT_NAME": campaign_id,
        "MLFLOW_TAGS": json.dumps({"mlflow.runName": run.id}),
        "TENSORBOARD_LOGGING_DIR": str(tensorboard_dir(workdir, run)),
    }
    return {k: v for k, v in wanted.items() if k not in environ}

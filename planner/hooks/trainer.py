"""The Hugging Face `Trainer` joins a campaign with one callback (imports transformers).

    Trainer(..., callbacks=[CampaignCallback()]).train(resume_from_checkpoint=campaign_resume())
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from planner.hooks.campaign import Campaign
from planner.hooks.files import warn
from planner.hooks.progress import EVERY_S


def _inside(path: str, folder: str) -> bool:
    path, folder = os.path.abspath(path), os.path.abspath(folder)
    return os.path.commonpath([path, folder]) == folder


class CampaignCallback(TrainerCallback):
    """Reports the step (and on CUDA the peak memory) to `CAMPAIGN_PROGRESS`, saves its
    checkpoints in the run's checkpoint folder with `CAMPAIGN_RESUME_PATH` a link to the
    latest, refuses to start from step 0 over a checkpoint, and ends a trial after its
    steps without saving. Run by hand it only reports nothing."""

    def __init__(self, *, every: float = EVERY_S, warmup_steps: int = 1,
                 environ: Mapping[str, str] | None = None) -> None:
        """`every`: seconds between progress writes; `warmup_steps`: first steps a trial
        does not time (compilation)."""
        self.campaign = Campaign(every=every, warmup_steps=warmup_steps, environ=environ)

    def _place(self, args: TrainingArguments) -> None:
        # Where the executor looks: checkpoint-N folders beside the resume path, whatever
        # output_dir the script was written with (runs share one working directory).
        folder = self.campaign.checkpoint_dir
        if folder is None or (args.output_dir and _inside(args.output_dir, folder)):
            return
        if args.output_dir:
            warn(f"checkpoints go to the run's folder {folder}, not {args.output_dir}")
        args.output_dir = folder

    def on_init_end(self, args: TrainingArguments, state: TrainerState,
                    control: TrainerControl, **kwargs: Any) -> None:
        self._place(args)

    def on_train_begin(self, args: TrainingArguments, state: TrainerState,
                       control: TrainerControl, **kwargs: Any) -> None:
        self._place(args)
        if not state.is_world_process_zero:
            self.campaign.progress.path = None  # one process reports
        self.campaign.begin(state.global_step)

    def on_step_end(self, args: TrainingArguments, state: TrainerState,
                    control: TrainerControl, **kwargs: Any) -> None:
        stop = self.campaign.step(state.global_step)
        if self.campaign.trial:
            control.should_save = False  # a trial keeps no checkpoint, and times no save
        if stop:
            control.should_training_stop = True

    def on_save(self, args: TrainingArguments, state: TrainerState,
                control: TrainerControl, **kwargs: Any) -> None:
        if not state.is_world_process_zero:
            return
        folder = os.path.join(args.output_dir or ".",
                              f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}")
        if os.path.isdir(folder):
            self.campaign.saved_folder(folder, state.global_step)

    def on_train_end(self, args: TrainingArguments, state: TrainerState,
                     control: TrainerControl, **kwargs: Any) -> None:
        self.campaign.finish()

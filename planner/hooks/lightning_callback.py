"""Lightning joins a campaign with one callback (imports lightning).

    L.Trainer(..., callbacks=[CampaignLightningCallback()]).fit(model, data,
                                                                ckpt_path=campaign_resume())
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lightning.pytorch import LightningModule, Trainer
from lightning.pytorch.callbacks import Callback

from planner.hooks.campaign import Campaign
from planner.hooks.progress import EVERY_S


class CampaignLightningCallback(Callback):
    """Reports the step (and on CUDA the peak memory) to `CAMPAIGN_PROGRESS`, saves a
    checkpoint at `CAMPAIGN_RESUME_PATH` every `every_n_steps` optimizer steps (written
    beside it, then renamed over it), refuses to start from step 0 over a checkpoint, and
    ends a trial after its steps without saving. Run by hand it saves and reports nothing."""

    def __init__(self, *, every_n_steps: int = 100, every: float = EVERY_S,
                 warmup_steps: int = 1, environ: Mapping[str, str] | None = None) -> None:
        """`every_n_steps`: optimizer steps between checkpoints (0: none); `every`: seconds
        between progress writes; `warmup_steps`: first steps a trial does not time."""
        self.every_n_steps = max(int(every_n_steps), 0)
        self.campaign = Campaign(every=every, warmup_steps=warmup_steps, environ=environ)
        self.seen: int | None = None

    def on_train_start(self, trainer: Trainer, pl_module: LightningModule) -> None:
        if not trainer.is_global_zero:
            self.campaign.progress.path = None  # one process reports
        self.campaign.begin(trainer.global_step)
        self.seen = trainer.global_step

    def on_train_batch_end(self, trainer: Trainer, pl_module: LightningModule, outputs: Any,
                           batch: Any, batch_idx: int) -> None:
        step = trainer.global_step
        if step == self.seen:  # a batch accumulated, no optimizer step yet
            return
        self.seen = step
        if self.campaign.step(step):
            trainer.should_stop = True
            return
        if (self.every_n_steps and step % self.every_n_steps == 0 and not self.campaign.trial
                and self.campaign.save_path is not None):
            with self.campaign.checkpoint(step, writer=trainer.is_global_zero) as path:
                trainer.save_checkpoint(path)

    def on_train_end(self, trainer: Trainer, pl_module: LightningModule) -> None:
        self.campaign.finish()

"""A Lightning script on a tiny regression model, joined to the campaign by
`CampaignLightningCallback`."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import lightning as L
import torch

from planner.hooks import CampaignLightningCallback, campaign_resume
from tests.hooks_scripts.common import args, hold, trace


class Tiny(L.LightningModule):
    def __init__(self, a):
        super().__init__()
        self.a = a
        self.layer = torch.nn.Linear(8, 1)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def on_train_start(self):
        trace(start=self.trainer.global_step)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        hold(self.a, self.trainer.global_step)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.01)


def main() -> None:
    a = args()
    torch.manual_seed(int(os.environ.get("CAMPAIGN_SEED") or 0))
    x = torch.randn(256, 8)
    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(x, x.sum(1, keepdim=True)),
                                       batch_size=4)
    trainer = L.Trainer(max_steps=a.steps, accelerator="cpu", logger=False,
                        enable_checkpointing=False, enable_progress_bar=False,
                        enable_model_summary=False,
                        callbacks=[CampaignLightningCallback(every_n_steps=a.save_every,
                                                             every=0.0)])
    trainer.fit(Tiny(a), data, ckpt_path=None if a.ignore_resume else campaign_resume())


if __name__ == "__main__":
    main()

"""A Hugging Face Trainer script on a tiny Llama built from its config (random weights,
nothing downloaded), joined to the campaign by `CampaignCallback`."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(__file__))))

import torch
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Trainer,
    TrainerCallback,
    TrainingArguments,
)

from planner.hooks import CampaignCallback, campaign_resume
from tests.hooks_scripts.common import args, hold, trace


class Traced(TrainerCallback):
    def __init__(self, a):
        self.a = a

    def on_train_begin(self, args, state, control, **kwargs):
        trace(start=state.global_step)

    def on_step_end(self, args, state, control, **kwargs):
        hold(self.a, state.global_step)


def main() -> None:
    a = args()
    torch.manual_seed(int(os.environ.get("CAMPAIGN_SEED") or 0))
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32,
                         num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=1,
                         max_position_embeddings=32)
    model = LlamaForCausalLM(config)
    data = [{"input_ids": ids, "labels": ids} for ids in torch.randint(0, 64, (64, 8))]
    training = TrainingArguments(
        output_dir="hf-out", max_steps=a.steps, per_device_train_batch_size=4,
        save_strategy="steps", save_steps=a.save_every, logging_steps=1000,
        report_to="none", use_cpu=True, disable_tqdm=True, dataloader_num_workers=0)
    resume = None if a.ignore_resume else campaign_resume()
    Trainer(model=model, args=training, train_dataset=data,
            callbacks=[CampaignCallback(every=0.0), Traced(a)]).train(
        resume_from_checkpoint=resume)


if __name__ == "__main__":
    main()

"""The sentence-transformers backend as `corpus size` measures it: modules of (ids, mask).

`planner.embed.sizing` grows and bisects batches of the longest texts on a workload whose
model is called as `model(ids, mask)`. `StackNet` is the folder's real stack in that form
(weights loaded, on the encoder's device). `ShapeNet` is the folder's transformer built
from its config alone, with random weights, for the meta device (FLOP counts) and fake
tensors (the CPU memory estimate): the weights' values change neither.

ShapeNet attends to every position (no mask). The batches sized are the widest of the
campaign, the longest texts cut to the truncation, which are whole rows; transformers
skips an all-ones mask too, and its check for one reads tensor values, which meta and
fake tensors do not have. A Dense module, a few thousand weights, is left out.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class StackNet(nn.Module):
    """The encoder's own module stack, called with padded ids and their mask."""

    def __init__(self, enc: Any) -> None:
        super().__init__()
        self.stack = enc.model
        self._enc = [enc]  # not a submodule: the encoder is no nn.Module

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> Any:
        """Vectors [batch, dim] as a float32 numpy array (`STEncoder.encode_ids`)."""
        return self._enc[0]._run({"input_ids": ids, "attention_mask": mask,
                                  **self._enc[0]._extra})


class ShapeNet(nn.Module):
    """The folder's transformer from its config, random weights, mean-pooled."""

    def __init__(self, config: Any) -> None:
        super().__init__()
        import transformers

        self.auto_model = transformers.AutoModel.from_config(config)

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """Token vectors of every position, averaged: [batch, hidden]."""
        hidden = self.auto_model(input_ids=ids).last_hidden_state
        return hidden.mean(1)  # type: ignore[no-any-return]

"""FLOPs per step, counted with `torch.utils.flop_counter.FlopCounterMode` on the meta device.

On `meta` nothing is allocated and nothing computed: counting a billion-parameter step takes
seconds. The counter sees matrix products, convolutions and attention kernels (the work
the peak TFLOPS of a card describes), not elementwise operations.
"""

from __future__ import annotations

import torch
from torch.utils.flop_counter import FlopCounterMode

from planner.measure.memory import forward_backward, quiet
from planner.measure.workloads import Builder


def count_flops(build: Builder, micro_batch: int, *, training: bool = True
                ) -> tuple[int, int, int]:
    """FLOPs of one micro-batch — forward and backward (training) or forward only — and
    the model's parameters and trainable parameters."""
    meta = torch.device("meta")
    with quiet():
        w = build(meta)
        batch = w.make_batch(micro_batch)
        with FlopCounterMode(display=False) as counter:
            if training and w.training:
                # Autocast does not change the count; meta tensors need none.
                forward_backward(w, batch, "fp32", "cpu")
            else:
                with torch.no_grad():
                    w.model(*batch)
    params = sum(p.numel() for p in w.model.parameters())
    trainable = sum(p.numel() for p in w.model.parameters() if p.requires_grad)
    return int(counter.get_total_flops()), params, trainable

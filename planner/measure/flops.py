"""FLOPs per step, counted with `torch.utils.flop_counter.FlopCounterMode` on the meta device.

On `meta` nothing is allocated and nothing computed: counting a billion-parameter step takes
seconds. The counter sees matrix products, convolutions and attention kernels (the work
the peak TFLOPS of a card describes), not elementwise operations.

Model FLOPs leave out the recompute of activation checkpointing (MFU); hardware FLOPs count
it (HFU, and the cross-card roofline, which needs the work the device does):
`count_flops(recompute=False)` runs `torch.utils.checkpoint.checkpoint` as a plain call
while counting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
import torch.utils.checkpoint
from torch.utils.flop_counter import FlopCounterMode

from planner.measure import workloads
from planner.measure.memory import fake_module_moves, forward_backward, quiet
from planner.measure.workloads import Builder


@contextlib.contextmanager
def no_recompute() -> Iterator[None]:
    """Activation checkpointing as a plain call: the FLOPs of the model, not the hardware."""

    def direct(function: Any, *args: Any, **kwargs: Any) -> Any:
        for k in ("use_reentrant", "preserve_rng_state", "context_fn", "determinism_check",
                  "debug"):
            kwargs.pop(k, None)
        return function(*args, **kwargs)

    saved = torch.utils.checkpoint.checkpoint, workloads.checkpoint
    torch.utils.checkpoint.checkpoint = direct  # type: ignore[assignment]
    workloads.checkpoint = direct  # type: ignore[assignment]
    token = workloads.MODEL_FLOPS.set(True)
    try:
        yield
    finally:
        torch.utils.checkpoint.checkpoint, workloads.checkpoint = saved
        workloads.MODEL_FLOPS.reset(token)


@contextlib.contextmanager
def _shapes_only(build: Builder) -> Iterator[torch.device]:
    """Where to build for counting: the meta device, or fake tensors for a builder that asks
    for them (transformers looks at its masks' values unless the tensors are fake, and a
    meta tensor has no value to look at)."""
    if not getattr(build, "fake_tensors", False):
        yield torch.device("meta")
        return
    from torch._subclasses.fake_tensor import FakeTensorMode

    with FakeTensorMode(), fake_module_moves():
        yield torch.device("cpu")


def count_flops(build: Builder, micro_batch: int, *, training: bool = True,
                recompute: bool = False) -> tuple[int, int, int]:
    """FLOPs of one micro-batch — forward and backward (training) or forward only — and
    the model's parameters and trainable parameters. `recompute`: count the forward passes
    activation checkpointing repeats in the backward pass (hardware FLOPs)."""
    with quiet(), (contextlib.nullcontext() if recompute else no_recompute()), \
            _shapes_only(build) as device:
        w = build(device)
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


def count_params(build: Builder) -> tuple[int, int]:
    """Parameters and trainable parameters, from the model built on `meta`."""
    with quiet():
        w = build(torch.device("meta"))
    return (sum(p.numel() for p in w.model.parameters()),
            sum(p.numel() for p in w.model.parameters() if p.requires_grad))

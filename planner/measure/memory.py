"""Peak memory: the fake-tensor estimate (no GPU) and the steps that run a workload.

The estimate runs real steps of the workload on fake tensors (`FakeTensorMode`: shapes and
dtypes, no storage, no compute) under torch's `MemTracker`
(`torch.distributed._tools.mem_tracker`), which attributes every storage to parameters,
buffers, gradients, optimizer states, activations and backward temporaries.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch

from planner.measure.workloads import Batch, Builder, Workload

GIB = 2**30


@dataclass(frozen=True)
class Estimate:
    """Fake-tensor memory estimate of one steady-state step, in bytes."""

    weights: int
    gradients: int
    optimizer: int
    activations: int
    peak: int

    def gib(self, name: str) -> float:
        """One field in GiB."""
        return float(getattr(self, name)) / GIB


def autocast(device_type: str, dtype: str) -> contextlib.AbstractContextManager[object]:
    """Autocast for bf16 / fp16, nothing for fp32 and tf32."""
    if dtype in ("bf16", "fp16"):
        return torch.autocast(device_type,
                              dtype=torch.bfloat16 if dtype == "bf16" else torch.float16)
    return contextlib.nullcontext()


def loss_of(out: object) -> torch.Tensor:
    """The factory protocol's loss: the output itself, or its mean."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"the model returned {type(out).__name__}, not a tensor")
    return out if out.dim() == 0 else out.float().mean()


def _scaler(w: Workload, dtype: str, device_type: str) -> Any:
    """fp16 training on CUDA scales the loss (its gradients would underflow otherwise)."""
    if dtype != "fp16" or device_type != "cuda" or w.optimizer is None:
        return None
    if w.scaler is None:
        w.scaler = torch.amp.GradScaler("cuda")
    return w.scaler


def forward_backward(w: Workload, batch: Batch, dtype: str, device_type: str,
                     accumulation: int = 1) -> None:
    """One micro-batch: forward (under autocast), then backward scaled for accumulation."""
    with autocast(device_type, dtype):
        loss = loss_of(w.model(*batch))
    scaler = _scaler(w, dtype, device_type)
    loss = loss / accumulation
    (scaler.scale(loss) if scaler is not None else loss).backward()


def optimizer_step(w: Workload, dtype: str = "fp32", device_type: str = "cpu") -> None:
    """Apply and clear the accumulated gradients (through the GradScaler for fp16)."""
    assert w.optimizer is not None
    scaler = _scaler(w, dtype, device_type)
    if scaler is not None:
        scaler.step(w.optimizer)
        scaler.update()
    else:
        w.optimizer.step()
    w.optimizer.zero_grad(set_to_none=True)


def train_step(w: Workload, batch: Batch, accumulation: int, dtype: str,
               device_type: str) -> None:
    """One optimizer step: `accumulation` micro-batches, then the update."""
    for _ in range(accumulation):
        forward_backward(w, batch, dtype, device_type, accumulation)
    optimizer_step(w, dtype, device_type)


def forward_only(w: Workload, batch: Batch, dtype: str, device_type: str) -> None:
    """One inference batch (embedding): forward under inference mode."""
    with torch.inference_mode(), autocast(device_type, dtype):
        w.model(*batch)


@contextlib.contextmanager
def quiet() -> Iterator[None]:
    """Silence torch's warnings that do not concern the user (numpy missing, fake mode)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


@contextlib.contextmanager
def fake_module_moves() -> Iterator[None]:
    """Let a factory call `Module.to()` / `.cuda()` / `.half()` under FakeTensorMode.

    torch 2.13 cannot swap fake parameters (every fake tensor is weakly referenced), so
    module conversions fail there. Everything is already built on the one fake device, so a
    device move is a no-op; a dtype conversion is applied in place through `.data`.
    """
    from torch import nn

    def convert(self: nn.Module, dtype: torch.dtype | None) -> nn.Module:
        if dtype is not None:
            for t in [*self.parameters(), *self.buffers()]:
                if t.is_floating_point():
                    t.data = t.data.to(dtype)
        return self

    def to(self: nn.Module, *args: object, **kwargs: object) -> nn.Module:
        return convert(self, torch._C._nn._parse_to(*args, **kwargs)[1])  # type: ignore[call-overload]

    patches = {
        "to": to,
        "cuda": lambda self, *a, **k: self,
        "cpu": lambda self: self,
        "half": lambda self: convert(self, torch.float16),
        "bfloat16": lambda self: convert(self, torch.bfloat16),
        "float": lambda self: convert(self, torch.float32),
    }
    saved = {name: getattr(nn.Module, name) for name in patches}
    try:
        for name, fn in patches.items():
            setattr(nn.Module, name, fn)
        yield
    finally:
        for name, fn in saved.items():
            setattr(nn.Module, name, fn)


def _tracker() -> object:
    """torch's MemTracker, able to track models with frozen parameters.

    In torch 2.13 MemTracker registers a gradient hook on every parameter, which fails on a
    frozen one (adapters, frozen encoders); this subclass hooks only the trainable ones.
    """
    from torch.distributed._tools.mem_tracker import MemTracker, _MemRefType

    class Tracker(MemTracker):
        def _track_module_params_and_buffers(self, module: torch.nn.Module,
                                             install_grad_hooks: bool = True
                                             ) -> tuple[int, int]:
            out = super()._track_module_params_and_buffers(module, install_grad_hooks=False)
            if not install_grad_hooks:
                return out

            def track(grad: torch.Tensor | None) -> None:
                if grad is not None:
                    self._update_and_maybe_create_winfos(grad, _MemRefType.GRAD)

            for param in module.parameters():
                if param.requires_grad and self._param_to_grad_hook_handles.get(param) is None:
                    self._param_to_grad_hook_handles[param] = (
                        param.register_hook(track),
                        param.register_post_accumulate_grad_hook(lambda p: track(p.grad)))
            return out

    return Tracker()


def _sum(snap: dict, *keys: str) -> int:
    return int(sum(snap.get(k, 0) for k in keys))


def fake_estimate(build: Builder, micro_batch: int, dtype: str,
                  accumulation: int = 1) -> Estimate:
    """Peak memory of a steady-state step at `micro_batch`, from fake tensors.

    Two steps run: the second, with optimizer states already allocated, is the one reported.
    With accumulation, two micro-batches run so the gradients held between them count.
    """
    from torch._subclasses.fake_tensor import FakeTensorMode

    with quiet(), FakeTensorMode():
        device = torch.device("cpu")
        with fake_module_moves():
            w = build(device)
        batch = w.make_batch(micro_batch)
        mt: Any = _tracker()
        mt.track_external(w.model, *(x for x in (w.optimizer,) if x is not None),
                          *(t for t in batch if isinstance(t, torch.Tensor)))
        peaks: list[int] = []
        weights = grads = opt = acts = 0
        for _ in range(2):
            with mt:
                if w.training:
                    for _ in range(min(accumulation, 2)):
                        forward_backward(w, batch, dtype, device.type, accumulation)
                        mt.reset_mod_stats()
                else:
                    forward_only(w, batch, dtype, device.type)
            snap = mt.get_tracker_snapshot("peak").get(device, {})
            peaks.append(_sum(snap, "Total"))
            acts = _sum(snap, "Activation", "Temp")
            now = mt.get_tracker_snapshot().get(device, {})
            weights, grads = _sum(now, "Parameter", "Buffer"), _sum(now, "Gradient")
            if w.optimizer is not None:
                with mt:
                    optimizer_step(w)
                peaks.append(_sum(mt.get_tracker_snapshot("peak").get(device, {}), "Total"))
                opt = _sum(mt.get_tracker_snapshot().get(device, {}), "Optstate")
            mt.reset_mod_stats()
        # The second step is the steady state; the first only allocates optimizer states.
        steady = peaks[len(peaks) // 2:]
    return Estimate(weights=weights, gradients=grads, optimizer=opt, activations=acts,
                    peak=max(steady))

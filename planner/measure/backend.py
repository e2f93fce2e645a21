"""Where steps run: the CPU or a CUDA device, behind one small interface.

CUDA steps are timed with events and a synchronize; CPU steps with `perf_counter` under an
explicit thread count. Memory on CUDA comes from the caching allocator's statistics, whose
rules shape everything here (torch's "CUDA semantics: memory management" notes):

- freed blocks stay *reserved* (cached) until `empty_cache()`, and only unreferenced ones
  are released: a tensor that a live traceback still references is not freed;
- `set_per_process_memory_fraction` caps what the allocator reserves (not the CUDA context);
- `reset_peak_memory_stats` sets the peaks to the *current* values, so a probe that starts
  with a full cache inherits it; `num_alloc_retries` is cumulative until
  `reset_accumulated_memory_stats`.

`CudaBackend` talks to the allocator through `api` (the `torch.cuda` module by default), so
tests can run the very same code against a fake allocator that follows these rules.
"""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from planner.figures.measurements import Device
from planner.measure.base import DEVICE, MeasureUnavailable
from planner.measure.device_names import cpu_model, match_card
from planner.spec.catalog import Catalog

GIB = 2**30
CONTEXT_GIB = 0.75
"""Memory the measuring process keeps outside the allocator (see `Card.context_gib`)."""


@dataclass(frozen=True)
class Peak:
    """Allocator statistics of one stretch of steps."""

    allocated_gib: float
    reserved_gib: float
    retries: int


class Backend:
    """The CPU: perf_counter timing, no memory statistics (see the fake-tensor estimate)."""

    kind = "cpu"
    oom_errors: tuple[type[BaseException], ...] = (torch.OutOfMemoryError,)

    def __init__(self, threads: int | None = None) -> None:
        if threads is None:
            threads = (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
                       else os.cpu_count() or 1)
        self.threads = threads
        torch.set_num_threads(self.threads)
        self.device = torch.device("cpu")

    def describe(self, catalog: Catalog) -> Device:
        """The device record written into measurements.toml."""
        return Device(name=f"CPU {cpu_model()}", kind="cpu", threads=self.threads)

    def time(self, step: Callable[[], None]) -> float:
        """Seconds one call of `step` takes."""
        start = time.perf_counter()
        step()
        return time.perf_counter() - start

    def clean_slate(self) -> None:
        """Release what is unreferenced and start the statistics afresh."""
        gc.collect()

    def reset_peak(self) -> None:
        """Peaks from now on (the allocator sets them to the current values)."""

    def retries(self) -> int:
        """Allocator retries so far (cumulative)."""
        return 0

    def peak(self) -> Peak | None:
        """Statistics since the last reset; None on CPU."""
        return None

    def room_gib(self) -> float | None:
        """GiB the allocator can have on this device (None: no limit known)."""
        return None

    def cap(self, memory_gib: float) -> float:
        """Limit the allocator to `memory_gib`; returns the fraction set."""
        return 1.0

    def precision(self, dtype: str) -> None:
        """TF32 matrix products for `tf32` only (fp32 means fp32)."""


class CudaBackend(Backend):
    """A CUDA device: event timing, allocator statistics, a per-process memory cap."""

    kind = "cuda"

    def __init__(self, index: int = 0, *, api: Any = None,
                 device: torch.device | None = None) -> None:
        self.api = api if api is not None else torch.cuda
        if not self.api.is_available():
            raise MeasureUnavailable(
                "no CUDA device: this torch build has CUDA "
                f"{torch.version.cuda or 'none (CPU build)'}; measure with --device cpu")
        if index >= self.api.device_count():
            raise MeasureUnavailable(f"no CUDA device {index}: this machine has "
                                     f"{self.api.device_count()}")
        self.index = index
        self.device = device or torch.device("cuda", index)
        self.threads = torch.get_num_threads()
        self.api.set_device(index)

    def _props(self) -> Any:
        return self.api.get_device_properties(self.index)

    def describe(self, catalog: Catalog) -> Device:
        props = self._props()
        cc = f"{props.major}.{props.minor}"
        memory = props.total_memory / GIB
        return Device(name=props.name, kind="cuda", compute_capability=cc,
                      memory_gib=round(memory, 2),
                      card=match_card(props.name, cc, memory, catalog))

    def time(self, step: Callable[[], None]) -> float:
        start = self.api.Event(enable_timing=True)
        end = self.api.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    def clean_slate(self) -> None:
        gc.collect()
        self.api.synchronize(self.index)
        self.api.empty_cache()
        self.api.reset_peak_memory_stats(self.index)
        self.api.reset_accumulated_memory_stats(self.index)

    def reset_peak(self) -> None:
        self.api.synchronize(self.index)
        self.api.reset_peak_memory_stats(self.index)

    def retries(self) -> int:
        return int(self.api.memory_stats(self.index).get("num_alloc_retries", 0))

    def peak(self) -> Peak:
        self.api.synchronize(self.index)
        stats = self.api.memory_stats(self.index)
        return Peak(allocated_gib=stats.get("allocated_bytes.all.peak", 0) / GIB,
                    reserved_gib=stats.get("reserved_bytes.all.peak", 0) / GIB,
                    retries=int(stats.get("num_alloc_retries", 0)))

    def room_gib(self) -> float:
        return float(self._props().total_memory) / GIB - CONTEXT_GIB

    def cap(self, memory_gib: float) -> float:
        total = self._props().total_memory / GIB
        fraction = memory_gib / total
        if not 0 < fraction <= 1:
            raise ValueError(f"a cap of {memory_gib:.2f} GiB does not fit {total:.2f} GiB")
        self.api.set_per_process_memory_fraction(fraction, self.index)
        return fraction

    def precision(self, dtype: str) -> None:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        torch.backends.cudnn.allow_tf32 = dtype == "tf32"


def make_backend(device: str, threads: int | None) -> Backend:
    """`auto` takes CUDA when there is one; `cuda:N` the N-th device."""
    m = DEVICE.match(device)
    if m is None or (m[1] != "cuda" and m[2] is not None):
        raise MeasureUnavailable(f"unknown device {device!r}: auto, cpu, cuda or cuda:N")
    if m[1] == "cuda" or (m[1] == "auto" and torch.cuda.is_available()):
        return CudaBackend(int(m[2] or 0))
    return Backend(threads)

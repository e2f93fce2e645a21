"""Where steps run: the CPU or a CUDA device, behind one small interface.

CUDA steps are timed with events and a synchronize; CPU steps with `perf_counter` under an
explicit thread count. Peak memory on CUDA comes from the allocator's statistics.
"""

from __future__ import annotations

import gc
import os
import platform
import time
from collections.abc import Callable

import torch

from planner.catalog import Catalog
from planner.measure import MeasureUnavailable
from planner.measurements import Device

GIB = 2**30


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
        return Device(name=f"CPU {_cpu_model()}", kind="cpu", threads=self.threads)

    def time(self, step: Callable[[], None]) -> float:
        """Seconds one call of `step` takes."""
        start = time.perf_counter()
        step()
        return time.perf_counter() - start

    def reset_peak(self) -> None:
        """Forget the peak so far."""

    def peak(self) -> tuple[float, float, int] | None:
        """(allocated GiB, reserved GiB, allocator retries) since the reset; None on CPU."""
        return None

    def cap(self, memory_gib: float) -> float:
        """Limit the process to `memory_gib` of device memory; returns the fraction set."""
        return 1.0

    def recover(self) -> None:
        """Give cached memory back after an out-of-memory error."""
        gc.collect()

    def precision(self, dtype: str) -> None:
        """TF32 matrix products for `tf32` only (fp32 means fp32)."""


class CudaBackend(Backend):
    """A CUDA device: event timing, allocator peaks, a per-process memory cap."""

    kind = "cuda"

    def __init__(self, index: int = 0) -> None:
        if not torch.cuda.is_available():
            raise MeasureUnavailable(
                "no CUDA device: this torch build has CUDA "
                f"{torch.version.cuda or 'none (CPU build)'}; measure with --device cpu")
        self.device = torch.device("cuda", index)
        self.threads = torch.get_num_threads()
        torch.cuda.set_device(self.device)

    def describe(self, catalog: Catalog) -> Device:
        props = torch.cuda.get_device_properties(self.device)
        cc = f"{props.major}.{props.minor}"
        memory = props.total_memory / GIB
        return Device(name=props.name, kind="cuda", compute_capability=cc,
                      memory_gib=round(memory, 2),
                      card=match_card(props.name, cc, memory, catalog))

    def time(self, step: Callable[[], None]) -> float:
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        return float(start.elapsed_time(end)) / 1000.0

    def reset_peak(self) -> None:
        torch.cuda.synchronize(self.device)
        torch.cuda.reset_peak_memory_stats(self.device)

    def peak(self) -> tuple[float, float, int] | None:
        torch.cuda.synchronize(self.device)
        stats = torch.cuda.memory_stats(self.device)
        return (torch.cuda.max_memory_allocated(self.device) / GIB,
                torch.cuda.max_memory_reserved(self.device) / GIB,
                int(stats.get("num_alloc_retries", 0)))

    def cap(self, memory_gib: float) -> float:
        total = torch.cuda.get_device_properties(self.device).total_memory / GIB
        fraction = min(1.0, memory_gib / total)
        torch.cuda.set_per_process_memory_fraction(fraction, self.device)
        return fraction

    def recover(self) -> None:
        gc.collect()
        torch.cuda.empty_cache()

    def precision(self, dtype: str) -> None:
        torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
        torch.backends.cudnn.allow_tf32 = dtype == "tf32"


def make_backend(device: str, threads: int | None) -> Backend:
    """`auto` takes CUDA when there is one."""
    if device == "cuda" or (device == "auto" and torch.cuda.is_available()):
        return CudaBackend()
    return Backend(threads)


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _tokens(text: str) -> set[str]:
    return set(text.lower().replace("-", " ").replace("(", " ").replace(")", " ").split())


def match_card(name: str, cc: str, memory_gib: float, catalog: Catalog) -> str:
    """The catalog key of a device, from its name, compute capability and memory; "" when
    no single card matches."""
    want = _tokens(name) - {"nvidia", "geforce"}
    best: list[tuple[int, str]] = []
    for key, card in catalog.cards.items():
        if card.compute_capability != cc or abs(card.memory_gib - memory_gib) > 0.15 * (
                card.memory_gib):
            continue
        have = _tokens(f"{card.name} {card.memory_type}") - {"nvidia", "geforce"}
        if not want <= have and not (want & have):
            continue
        best.append((len(want & have), key))
    best.sort(reverse=True)
    if len(best) == 1 or (len(best) > 1 and best[0][0] > best[1][0]):
        return best[0][1]
    return ""

"""The device a trial runs on, and its cards' used memory, read with NVML.

NVML (`pynvml`, from the `nvidia-ml-py` package of the `trial` extra) is imported only here,
inside `open_nvml`; a trial on a machine without it, or without a GPU, runs on the CPU and
says so. Card indices are NVML's, which are CUDA's under `CUDA_DEVICE_ORDER=PCI_BUS_ID`.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any

from planner.figures.measurements import Device
from planner.measure.device_names import cpu_model, match_card
from planner.spec.catalog import Catalog

GIB = float(2**30)


class Nvml:
    """The few NVML calls a trial makes, on the `pynvml` module (or a stand-in)."""

    def __init__(self, api: Any) -> None:
        self.api = api

    def count(self) -> int:
        """Cards NVML sees."""
        return int(self.api.nvmlDeviceGetCount())

    def _handle(self, index: int) -> Any:
        return self.api.nvmlDeviceGetHandleByIndex(index)

    def name(self, index: int) -> str:
        """The card's name as the driver reports it."""
        name = self.api.nvmlDeviceGetName(self._handle(index))
        return name.decode() if isinstance(name, bytes) else str(name)

    def compute_capability(self, index: int) -> str:
        """e.g. "9.0"."""
        major, minor = self.api.nvmlDeviceGetCudaComputeCapability(self._handle(index))
        return f"{major}.{minor}"

    def total_bytes(self, index: int) -> int:
        """The card's memory."""
        return int(self.api.nvmlDeviceGetMemoryInfo(self._handle(index)).total)

    def used_bytes(self, index: int) -> int | None:
        """Memory in use on the card now, by every process; None when it cannot be read."""
        try:
            return int(self.api.nvmlDeviceGetMemoryInfo(self._handle(index)).used)
        except self.api.NVMLError:
            return None

    def close(self) -> None:
        """Release NVML."""
        with contextlib.suppress(self.api.NVMLError):
            self.api.nvmlShutdown()


def open_nvml(api: Any = None) -> Nvml | None:
    """NVML when it loads and sees a card, else None (no package, no driver, no card).
    `api` stands in for the `pynvml` module (tests)."""
    if api is None:
        try:
            import pynvml  # the `trial` extra: only a GPU trial needs it
        except ImportError:
            return None
        api = pynvml
    try:
        api.nvmlInit()
        nvml = Nvml(api)
        if nvml.count() > 0:
            return nvml
        nvml.close()
    except api.NVMLError:
        pass
    return None


def describe(nvml: Nvml | None, cards: list[int], catalog: Catalog) -> Device:
    """The device a trial on `cards` runs on: the first card's model, or the CPU."""
    if nvml is None or not cards:
        return Device(name=f"CPU {cpu_model()}", kind="cpu", threads=os.cpu_count())
    index = cards[0]
    name, cc = nvml.name(index), nvml.compute_capability(index)
    memory = nvml.total_bytes(index) / GIB
    return Device(name=name, kind="cuda", compute_capability=cc, memory_gib=round(memory, 2),
                  card=match_card(name, cc, memory, catalog))


@dataclass
class MemoryWatch:
    """The most memory in use on a run's cards during its trial, less what was in use on
    each before it started (another process's, a CUDA context left over)."""

    nvml: Nvml
    cards: list[int]
    base: dict[int, int] = field(default_factory=dict)
    peak: int = 0

    def __post_init__(self) -> None:
        for card in self.cards:
            used = self.nvml.used_bytes(card)
            self.base[card] = used if used is not None else 0

    def sample(self) -> None:
        """Read each card once."""
        for card in self.cards:
            used = self.nvml.used_bytes(card)
            if used is not None:
                self.peak = max(self.peak, used - self.base[card])

    def peak_bytes(self) -> int | None:
        """The most seen on one card (None: nothing above what was in use before)."""
        return self.peak if self.peak > 0 else None

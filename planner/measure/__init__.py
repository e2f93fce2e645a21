"""Measuring workloads with torch: step time, peak memory, FLOPs, largest micro-batch.

This package's `__init__` imports no torch: `measure_preset` imports the torch code when it
is called, so the plain headless planner never loads it. Errors:

- `MeasureUnavailable`: torch is not installed, or CUDA was asked for and is not there;
- `planner.errors.InputError`: a bad preset section, `factory` string or factory;
- `MeasureOOM`: out of memory where no smaller micro-batch can help.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from planner.measure.base import DEVICE, MeasureOOM, MeasureUnavailable, torch_available
from planner.measure.progress import MeasureProgress

if TYPE_CHECKING:
    from planner.figures.measurements import Measurements
    from planner.spec.catalog import Catalog
    from planner.spec.preset import Preset

__all__ = ["DEVICE", "MeasureOOM", "MeasureProgress", "MeasureUnavailable", "measure_preset",
           "torch_available"]


def measure_preset(preset: Preset, catalog: Catalog, *, steps: int | None = None,
                   progress: Callable[[MeasureProgress], None] | None = None,
                   cancel: threading.Event | None = None,
                   device: str = "auto",
                   threads: int | None = None, source: str | None = None,
                   command: str = "") -> Measurements:
    """Measure every configuration of `preset` (see `planner.measure.runner`).

    `progress` is called from the thread running the measurement; `cancel` is checked
    between steps, and a cancelled run returns what was measured so far, marked partial.
    """
    from planner.figures.measured import require_spec

    require_spec(preset, source)
    if not torch_available():
        raise MeasureUnavailable(
            "torch is not installed: install it (pip install 'campaign-planner[measure]', or "
            "the CPU build: pip install torch) to measure; planning needs no torch")
    from planner.measure.runner import run

    return run(preset, catalog, steps=steps, progress=progress, cancel=cancel, device=device,
               threads=threads, source=source, command=command)

"""What every measuring module shares and the package re-exports: device names, the two
ways a measurement cannot go on, and whether torch is there. Imports no torch."""

from __future__ import annotations

import importlib.util
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from planner.figures.measurements import Measurements

DEVICE = re.compile(r"^(auto|cpu|cuda)(?::(\d+))?$")
"""Device names `measure` takes: auto, cpu, cuda, cuda:N."""


class MeasureUnavailable(RuntimeError):
    """Measurement cannot run here (no torch, or no GPU when one was asked for)."""


class MeasureOOM(RuntimeError):
    """Out of device memory that recovery cannot get around. `partial` holds what was
    measured before it."""

    partial: Measurements | None = None


def torch_available() -> bool:
    """Whether torch can be imported, without importing it."""
    return importlib.util.find_spec("torch") is not None

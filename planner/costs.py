"""Figures with provenance: every step time, peak memory or throughput says where it came from."""

from __future__ import annotations

from typing import Literal, Self

from pydantic import Field, model_validator

from planner import bounds
from planner.model import Strict

Source = Literal["entered", "measured", "scaled", "analytic"]


class Figure(Strict):
    """A number and where it came from."""

    value: float = Field(gt=0, le=bounds.FIGURE)
    """The figure itself, in the unit named by the field that holds it."""
    source: Source
    """`entered` by hand, `measured` on `device`, `scaled` from a measurement on `device`,
    or `analytic` (computed from a formula, nothing run)."""
    device: str = ""
    """The device measured on (required for `measured` and `scaled`)."""
    note: str = ""
    """Free text: the command that measured it, the formula used, a caveat."""

    @model_validator(mode="after")
    def _device_named(self) -> Self:
        if self.source in ("measured", "scaled") and not self.device:
            raise ValueError(f"@device: a {self.source} figure must name the device")
        return self

    def label(self) -> str:
        """Provenance in words, e.g. `measured on NVIDIA H100` or `entered`."""
        if self.source == "measured":
            return f"measured on {self.device}"
        if self.source == "scaled":
            return f"scaled from {self.device}"
        return self.source

"""Figures with provenance: every step time, peak memory or throughput says where it came from
and which card it holds for."""

from typing import Literal, Self

from pydantic import Field, model_validator

from planner.spec import bounds
from planner.spec.base import Lax, Strict

Source = Literal["entered", "measured", "scaled", "analytic"]
Estimate = Literal["typical", "cautious"]


class Figure(Strict):
    """A number, the card it holds for, and where it came from."""

    value: float = Field(gt=0, le=bounds.FIGURE)
    """The figure itself, in the unit named by the field that holds it."""
    source: Source
    """`entered` by hand, `measured` on `device`, `scaled` from a figure taken on `device`,
    or `analytic` (computed from a formula, nothing run)."""
    card: str = ""
    """Catalog key of the card the value holds for: in a preset, the card it was taken on
    (its anchor; empty means the campaign's card, and is written out when saved). Planning
    on any other card derives a figure from this one, never from a derived one."""
    device: str = ""
    """The device measured on (required for `measured` and `scaled`)."""
    low: float | None = Field(default=None, gt=0)
    """Low end of the estimate's range (scaled and analytic figures)."""
    high: float | None = Field(default=None, gt=0)
    """High end of the estimate's range (scaled and analytic figures)."""
    note: str = ""
    """Free text: the command that measured it, the formula used, a caveat."""

    @model_validator(mode="after")
    def _device_named(self) -> Self:
        if self.source in ("measured", "scaled") and not self.device:
            raise ValueError(f"@device: a {self.source} figure must name the device")
        if self.low is not None and self.high is not None and self.low > self.high:
            raise ValueError("@low: the low end is above the high end")
        return self

    def label(self) -> str:
        """Provenance in words, e.g. `measured on NVIDIA H100` or `entered`."""
        if self.source == "measured":
            return f"measured on {self.device}"
        if self.source == "scaled":
            return f"scaled from {self.device}"
        return self.source

    def span(self) -> str:
        """The range in words, e.g. `2.9–4.1`; empty when the figure has none."""
        if self.low is None or self.high is None:
            return ""
        return f"{self.low:.3g}–{self.high:.3g}"


FIGURE_FIELDS = ("step_time_s", "peak_memory_gib", "throughput_tokens_per_s")
"""The fields of a workload that hold a Figure."""


def anchor_figures(data: object, card: str) -> object:
    """A raw preset section with every figure that names no card anchored to `card` (the
    campaign's card): a figure's anchor is fixed once, so a later card change leaves it."""
    if isinstance(data, dict):
        out = {}
        for k, v in data.items():
            raw = v.model_dump() if isinstance(v, Strict) else v
            out[k] = ({**raw, "card": card} if k in FIGURE_FIELDS and isinstance(raw, dict)
                      and not raw.get("card") else anchor_figures(raw, card))
        return out
    if isinstance(data, list):
        return [anchor_figures(v, card) for v in data]
    if isinstance(data, Strict):
        return anchor_figures(data.model_dump(), card)
    return data


class MeasuredFrom(Lax):
    """Where a plan's measured figures came from (carried into plan.toml)."""

    file: str = ""
    """The measurements file."""
    device: str
    """Device measured on."""
    device_kind: str
    """`cpu` or `cuda`."""
    compute_capability: str = ""
    """Its compute capability."""
    torch: str
    """torch version."""
    cuda: str = ""
    """CUDA version of the torch build."""
    dtype: str
    """Precision measured."""
    date: str
    """When."""
    workload: str
    """Reference workload or factory."""
    partial: bool = False
    """The measurement was stopped early."""

"""Cross-card estimates: how a step time taken on one card predicts another.

A step time taken on card X moves to card Y by the calibrated speed-up of
`planner.figures.calibration` (fitted on published single-GPU training throughput), with the range
that the published models spread over. The analytic tier divides counted FLOPs by the
peak the efficiency model fitted on published LLM training runs gives (see
`planner.figures.analytic_time`) and moves the result by the same rule. No
estimate implies more than Y's dense peak for the dtype: when the FLOPs are known, a step is
never shorter than FLOPs ÷ peak_Y. A timing on a device with no known peak (a CPU) does not
transfer at all: the analytic tier takes over.

`cautious` plans on the slow end of the range, `typical` on the calibrated value.
"""

from __future__ import annotations

from typing import NamedTuple

from planner.figures.analytic_time import analytic_seconds
from planner.figures.calibration import speedup
from planner.figures.efficiency import Work
from planner.spec.catalog import Card, Catalog, Dtype
from planner.spec.costs import Estimate

LOW_MFU = 0.05
HIGH_MFU = 1.0


class Rates(NamedTuple):
    """What a device can do: dense peak for the dtype and memory bandwidth."""

    name: str
    peak_tflops: float
    bandwidth_gbps: float


def card_rates(card: Card, dtype: Dtype) -> Rates:
    """A catalog card's rates for a dtype (fp8 falls back to bf16 on cards without it)."""
    peak = card.peak_tflops(dtype) or card.peak_tflops("bf16")
    return Rates(name=card.name, peak_tflops=peak, bandwidth_gbps=card.bandwidth_gbps)


def mfu(flops: float, seconds: float, peak_tflops: float) -> float:
    """Model FLOPs utilization: achieved FLOP/s over the dense peak."""
    return flops / seconds / (peak_tflops * 1e12)


def mfu_flags(value: float | None) -> list[str]:
    """Warnings for an implausible MFU: above 100 % (FLOPs over-counted, wrong peak or
    dtype) or below 5 % (launch- or input-bound step, tiny model, or wrong FLOP count)."""
    if value is None:
        return []
    if value > HIGH_MFU:
        return [f"MFU {value:.0%} is above 100%: the FLOP count, the dtype or the device's "
                "peak is wrong"]
    if value < LOW_MFU:
        return [f"MFU {value:.1%} is below 5%: the step is bound by something other than "
                "the matrix units (small model, launches, data, host)"]
    return []


class Span(NamedTuple):
    """An estimated step time: the calibrated value and the fast and slow ends."""

    typical: float
    fast: float
    slow: float
    note: str

    def pick(self, estimate: Estimate) -> float:
        """The value a plan uses: the slow end when cautious."""
        return self.slow if estimate == "cautious" else self.typical


def planned_on(estimate: Estimate) -> str:
    """Which end a figure was planned on, in words."""
    return ("planned on the slow end (--estimate cautious)" if estimate == "cautious"
            else "planned on the calibrated value (--estimate typical)")


def _floor(flops: float | None, dst: Card, dtype: Dtype) -> float:
    if not flops:
        return 0.0
    return flops / ((dst.peak_tflops(dtype) or dst.bf16_tflops) * 1e12)


def scale_step_time(seconds: float, flops: float | None, src_key: str, dst_key: str,
                    catalog: Catalog, dtype: Dtype) -> Span:
    """A step time taken on `src_key`, predicted on `dst_key` by the calibrated rule."""
    sp = speedup(src_key, dst_key, catalog, dtype)
    floor = _floor(flops, catalog.get(dst_key), dtype)
    return Span(typical=max(seconds / sp.typical, floor), fast=max(seconds / sp.high, floor),
                slow=max(seconds / sp.low, floor), note=sp.note)


def analytic_step_time(flops: float, dst_key: str, catalog: Catalog, dtype: Dtype,
                       work: Work | None = None) -> Span:
    """The analytic tier's step time for `flops` on `dst_key` (`work`: how the FLOPs split
    and the step's shape, see `planner.figures.efficiency`)."""
    t, fast, slow, note = analytic_seconds(flops, dst_key, catalog, dtype, work)
    return Span(typical=t, fast=fast, slow=slow, note=note)

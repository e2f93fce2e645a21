"""Cross-card estimates: how a step time measured on one device predicts another.

The roofline rule. A step measured at `t` seconds on device X, doing `F` FLOPs, ran at
`MFU = F / (t · peak_X)` of X's dense peak for the dtype. That share of the step is taken as
compute-bound and scales with the dense TFLOPS ratio; the rest (memory-bound kernels,
elementwise work, launches) scales with the memory-bandwidth ratio:

    t_Y = t · (MFU · peak_X / peak_Y  +  (1 − MFU) · bandwidth_X / bandwidth_Y)

The compute share alone takes `F / peak_Y`, so the estimate never implies more than Y's
peak; `scale_step_time` also clamps to that floor explicitly. When no MFU is known (no
FLOP count, or an entered figure), the step is assumed bound by whichever of the two ratios
is worse for Y — a conservative rule. When the source device has no known peak (a CPU), a
timing does not transfer at all: the analytic tier divides the counted FLOPs by Y's peak
at an assumed MFU (`ASSUMED_MFU`).
"""

from __future__ import annotations

from dataclasses import dataclass

from planner.catalog import Card, Dtype

ASSUMED_MFU = 0.35
"""Model FLOPs utilization assumed where none was measured: typical of a well-fed
single-card transformer training step in bf16 (30–45 %)."""
LOW_MFU = 0.05
HIGH_MFU = 1.0


@dataclass(frozen=True)
class Rates:
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


def scale_step_time(seconds: float, flops: float | None, src: Rates,
                    dst: Rates) -> tuple[float, str]:
    """A step time measured on `src`, predicted on `dst` by the roofline rule; with a note."""
    compute_ratio = src.peak_tflops / dst.peak_tflops
    memory_ratio = src.bandwidth_gbps / dst.bandwidth_gbps
    if not flops:
        t = seconds * max(compute_ratio, memory_ratio)
        return t, (f"scaled from {src.name} with no MFU known: bound by the worse of "
                   f"TFLOPS ×{1 / compute_ratio:.2f} and bandwidth ×{1 / memory_ratio:.2f}")
    share = min(mfu(flops, seconds, src.peak_tflops), 1.0)
    t = seconds * (share * compute_ratio + (1.0 - share) * memory_ratio)
    floor = flops / (dst.peak_tflops * 1e12)
    t = max(t, floor)
    return t, (f"roofline from {src.name}: {share:.0%} compute-bound (measured MFU) × TFLOPS "
               f"ratio {1 / compute_ratio:.2f}, rest × bandwidth ratio {1 / memory_ratio:.2f}")


def analytic_step_time(flops: float, dst: Rates, assumed_mfu: float = ASSUMED_MFU
                       ) -> tuple[float, str]:
    """FLOPs ÷ (peak × assumed MFU): the analytic tier's step time on `dst`."""
    return flops / (dst.peak_tflops * 1e12 * assumed_mfu), (
        f"{flops:.3g} FLOPs ÷ ({dst.peak_tflops:g} TFLOPS × {assumed_mfu:.0%} assumed MFU)")

"""The analytic tier's step time: counted FLOPs at the efficiency the fitted model gives
(`planner.figures.efficiency`), on the card of the fitted chip, then moved to the card
planned by the cross-card rule of `planner.figures.calibration`.

The range is the fit's residual band (5th–95th percentile, never narrower than ±15 %),
widened by the published spread of the cross-card rule when the step is moved to a card of
another chip or memory. No estimate is faster than the card's dense peak.
"""

from __future__ import annotations

from planner.figures.calibration import load_calibration, spread, tau
from planner.figures.efficiency import (
    Work,
    chip_fit,
    load_fit,
    seconds_on_anchor,
    utilization,
)
from planner.spec.catalog import Catalog, Dtype

GENERIC = Work(gemm=1.0, attn=0.0, d_model=2048.0, tokens=8192.0, checkpointing=False)
"""The step assumed when only its FLOPs are known: matrix products of a 1B-class model
(d_model 2048) at 8192 tokens per micro-batch, near the middle of the fitted rows."""


def _peak(card_peak: float | None, fallback: float) -> float:
    return card_peak or fallback


def analytic_seconds(flops: float, dst_key: str, catalog: Catalog, dtype: Dtype,
                     work: Work | None = None) -> tuple[float, float, float, str]:
    """(typical, fast, slow, note): seconds of a training step of `flops` on `dst_key`.
    `work` splits the FLOPs and gives the shape (None: `GENERIC`)."""
    fit, cal = load_fit(), load_calibration()
    dst = catalog.get(dst_key)
    chip, cf = chip_fit(dst.chip, fit)
    anchor = catalog.get(cf.card)
    # The fit is of bf16 steps; fp8 steps are timed at the bf16 peak (their kernels reach
    # a far smaller share of the fp8 peak).
    rate: Dtype = "bf16" if dtype == "fp8" else dtype
    anchor_peak = _peak(anchor.peak_tflops(rate), anchor.bf16_tflops)
    shape = work or GENERIC
    total = shape.gemm + shape.attn
    scaled = shape._replace(gemm=shape.gemm * flops / total, attn=shape.attn * flops / total)
    on_anchor = seconds_on_anchor(scaled, cf, fit, anchor_peak)
    ref = catalog.get(cal.reference_card)
    t = on_anchor * tau(dst, ref, rate, cal) / tau(anchor, ref, rate, cal)
    lo, hi = spread(cf.card, dst_key, cal)
    peak = _peak(dst.peak_tflops(rate), dst.bf16_tflops)
    floor = flops / (peak * 1e12)
    fast = max(t * fit.band_low / hi, floor)
    slow = t * fit.band_high / lo
    t = max(t, floor)
    util = utilization(scaled, cf, fit)
    what = ("shape unknown: a 1B-class step assumed" if work is None else
            f"d_model {shape.d_model:.0f}, {shape.tokens:.0f} tokens per micro-batch"
            + (", activation checkpointing" if shape.checkpointing else "")
            + (f", {shape.attn / total:.0%} of FLOPs in attention" if shape.attn else ""))
    moved = ("" if dst_key == cf.card else
             f", moved to {dst_key} by the calibrated cross-card rule")
    note = (f"{flops:.3g} FLOPs at {util:.0%} of the {cf.card} dense peak ({chip} efficiency "
            f"model fitted on llm-foundry's MPT table; {what}){moved}: "
            f"{flops / t / (peak * 1e12):.0%} of {dst_key}'s peak; range ×{fit.band_low:.2f}"
            f"–×{fit.band_high:.2f} from the fit's residuals")
    return t, fast, slow, note

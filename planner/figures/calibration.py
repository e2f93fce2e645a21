"""The cross-card model, calibrated on published training throughput (`presets/throughput.toml`).

Relative to the reference card R, a typical training step on card C takes

    tau_C = s · peak_R / (e_chip · peak_C)  +  (1 − s) · bandwidth_R / bandwidth_C

where `s` (the compute-bound share) and `e_chip` (the share of the dense peak a chip
achieves, relative to R's) are fitted on the published table. Card X to card Y speeds a step
up by tau_X / tau_Y. The range beside each estimate is the spread of the published per-model
speed-ups around their geometric mean, for the same pair of cards (or cards of the same chip
where the table has no row), never narrower than the fit's own error (`min_band`).
"""

import math
from typing import NamedTuple

from pydantic import Field, ValidationError

from planner.errors import from_validation
from planner.spec.base import Strict
from planner.spec.catalog import Card, Catalog, Dtype
from planner.spec.shipped import shipped
from planner.tomlio import parse_toml


class Source(Strict):
    """One published source of cross-card measurements."""

    key: str
    """Short name."""
    title: str
    """What it is."""
    url: str
    """Where it is, pinned to a commit where possible."""
    table: str
    """Which table, and its unit."""
    date: str
    """When the table was last changed."""
    note: str = ""
    """What was checked."""


class Published(Strict):
    """One card's row of the published table."""

    row: str
    """The row's name in the source."""
    values: list[float] = Field(min_length=1)
    """Throughput per model, in the order of `Calibration.models`."""


class Calibration(Strict):
    """The fitted model and the published figures it was fitted on."""

    reference_card: str
    """Catalog key of the card every speed is relative to."""
    compute_share: float = Field(gt=0, le=1)
    """Share of a typical step on the reference card that scales with the dense peak."""
    min_band: float = Field(ge=0, lt=1)
    """Narrowest relative range given to any estimate (the fit's own error)."""
    models: list[str] = Field(min_length=1)
    """The published models used."""
    excluded: list[str] = []
    """Published models left out, and why."""
    efficiency: dict[str, float]
    """Achieved share of the dense peak per chip, relative to the reference card's chip."""
    proxies: dict[str, str] = {}
    """Catalog cards without a published row → a card of the same chip that has one."""
    sources: list[Source] = Field(min_length=1)
    """Where the figures come from."""
    published: dict[str, Published]
    """Published throughput per catalog card."""


_CAL: Calibration | None = None


def load_calibration() -> Calibration:
    """The shipped calibration (read once)."""
    global _CAL
    if _CAL is None:
        res = shipped("throughput.toml")
        name = str(res)
        try:
            _CAL = Calibration.model_validate(parse_toml(res.read_bytes(), name))
        except ValidationError as exc:
            raise from_validation(exc, name) from None
    return _CAL


class Speedup(NamedTuple):
    """How much faster a typical step runs on one card than on another, with its range."""

    typical: float
    """The calibrated speed-up."""
    low: float
    """Slow end (the published model that gained least)."""
    high: float
    """Fast end."""
    note: str
    """How it was worked out, in words."""


def efficiency(card: Card, cal: Calibration) -> float:
    """The chip's fitted efficiency (1.0, the reference's, for a chip not fitted)."""
    return cal.efficiency.get(card.chip, 1.0)


def tau(card: Card, ref: Card, dtype: Dtype, cal: Calibration) -> float:
    """Time of a typical step on `card`, relative to the reference card."""
    return tau_of(card.peak_tflops(dtype) or card.bf16_tflops, card.bandwidth_gbps,
                  card.chip, ref, dtype, cal)


def tau_of(peak: float, bandwidth_gbps: float, chip: str, ref: Card, dtype: Dtype,
           cal: Calibration) -> float:
    """`tau` of a device given by its dense peak, bandwidth and chip (one outside the
    catalog)."""
    ref_peak = ref.peak_tflops(dtype) or ref.bf16_tflops
    s = cal.compute_share
    return (s * ref_peak / (cal.efficiency.get(chip, 1.0) * peak)
            + (1.0 - s) * ref.bandwidth_gbps / bandwidth_gbps)


def _deviations(key: str, cal: Calibration) -> list[float] | None:
    """Per-model log speed-up over the reference, less its mean (None: no published row)."""
    row = cal.published.get(cal.proxies.get(key, key))
    ref = cal.published.get(cal.reference_card)
    if row is None or ref is None:
        return None
    logs = [math.log(v / r) if v > 0 and r > 0 else 0.0
            for v, r in zip(row.values, ref.values, strict=True)]
    mean = sum(logs) / len(logs)
    return [x - mean for x in logs]


def spread(src_key: str, dst_key: str, cal: Calibration) -> tuple[float, float]:
    """(low, high) multipliers of a speed-up from `src_key` to `dst_key`: the published
    per-model spread for that pair, at least ± `min_band`."""
    band = (1.0 / (1.0 + cal.min_band), 1.0 + cal.min_band)
    if src_key == dst_key:
        return 1.0, 1.0
    a, b = _deviations(src_key, cal), _deviations(dst_key, cal)
    if a is None or b is None:
        # No published row for one side: the widest spread of any published card.
        rows = [d for k in cal.published if (d := _deviations(k, cal)) is not None]
        lo = min(min(d) for d in rows)
        hi = max(max(d) for d in rows)
        return min(math.exp(lo), band[0]), max(math.exp(hi), band[1])
    diffs = [y - x for x, y in zip(a, b, strict=True)]
    return min(math.exp(min(diffs)), band[0]), max(math.exp(max(diffs)), band[1])


def speedup(src_key: str, dst_key: str, catalog: Catalog, dtype: Dtype) -> Speedup:
    """The calibrated speed-up of a training step from card `src_key` to `dst_key`."""
    cal = load_calibration()
    src, dst = catalog.get(src_key), catalog.get(dst_key)
    ref = catalog.get(cal.reference_card)
    typical = tau(src, ref, dtype, cal) / tau(dst, ref, dtype, cal)
    lo, hi = spread(src_key, dst_key, cal)
    note = (f"calibrated speed-up ×{typical:.2f} (published range ×{typical * lo:.2f}–"
            f"×{typical * hi:.2f}) from {src_key} to {dst_key}: {cal.compute_share:.0%} of "
            f"the step on the dense peak at chip efficiency {efficiency(src, cal):g} → "
            f"{efficiency(dst, cal):g}, the rest on memory bandwidth "
            f"({cal.sources[0].key}, {cal.sources[0].date})")
    return Speedup(typical=typical, low=typical * lo, high=typical * hi, note=note)

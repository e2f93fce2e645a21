"""The analytic tier's efficiency model: how much of a card's dense peak a training step
achieves, fitted on published LLM training throughput (`presets/efficiency.toml`).

A step's FLOPs split into matrix products (`gemm`: 6 · params · tokens, with the recompute
of activation checkpointing) and attention (`attn`: 12 · layers · d_model · seq_len per
token, the QKᵀ and AV products). On a fitted chip c the step takes

    t = (gemm / g_c(d) + attn / a_c) · ρ^ckpt · (1 + k / (b · s)) / (E_c · peak)

- `E_c` (`level`): the share of the dense peak large matrix products reach on that chip;
- `g_c(d) = d / (d + d0_c)` (`width_scale` = d0): narrow models tile the tensor cores less
  well, so utilization rises with the hidden width and saturates;
- `a_c` (`attention`): fused attention's efficiency relative to the matrix products;
- `ρ` (`checkpointing`): what recomputing activations costs beyond the FLOPs counted for it
  (the extra launches and the lost overlap);
- `k` (`micro_batch_tokens`): per-micro-batch work that does not scale with the tokens
  (launches, the optimizer, norms), so utilization rises with b · s and saturates.

A chip the table has no rows for takes the model of the nearest fitted chip (the same
architecture generation when fitted, else the reference chip) and is moved from that
chip's card by the cross-card rule fitted on Lambda's tables
(`planner.figures.calibration.tau`).
"""

import math
from typing import NamedTuple

from pydantic import Field, ValidationError

from planner.errors import from_validation
from planner.figures.calibration import Source
from planner.figures.encoder import EncoderCalibration
from planner.spec.base import Strict
from planner.spec.shipped import shipped
from planner.tomlio import parse_toml

WIDTH_PER_LAYER = 90.0
"""d_model / layers of the fitted models (geometric mean over MPT 125M–70B), used to guess the
width of a model given only by its parameter count: params ≈ 12 · layers · d_model²."""


class ChipFit(Strict):
    """The fitted efficiency of one chip."""

    card: str
    """Catalog card the chip's rows were measured on (what other cards of the chip are moved
    from)."""
    level: float = Field(gt=0, le=1)
    """E_c: share of the dense peak wide matrix products reach."""
    width_scale: float = Field(ge=0)
    """d0_c: hidden width at which matrix products reach half of `level`."""
    attention: float = Field(gt=0)
    """a_c: fused attention's efficiency relative to the matrix products."""


class Fit(Strict):
    """The fitted parameters."""

    chips: dict[str, ChipFit] = Field(min_length=1)
    """Per fitted chip."""
    reference_chip: str
    """Fitted chip whose model a chip of another generation takes."""
    checkpointing: float = Field(gt=0)
    """ρ: step time factor of activation checkpointing beyond its counted recompute."""
    micro_batch_tokens: float = Field(ge=0)
    """k: per-micro-batch overhead, in tokens."""
    band_low: float = Field(gt=0, le=1)
    """Fast end of the range, as a multiple of the typical step time (from the residuals)."""
    band_high: float = Field(ge=1)
    """Slow end of the range, as a multiple of the typical step time."""
    residual_rms: float = Field(ge=0)
    """Root mean square of the fit's log residuals."""
    allreduce_exposed: float = Field(ge=0, le=1)
    """Share of a ring all-reduce that is not hidden behind the backward pass (fitted on
    per-GPU throughput at several GPU counts)."""


class Shape(Strict):
    """A published model's shape (from its configuration file)."""

    d_model: int
    """Hidden size."""
    layers: int
    """Blocks."""
    vocab: int
    """Vocabulary (the tied output head)."""


class Row(Strict):
    """One published training run."""

    table: str
    """Key of the source it comes from."""
    model: str
    """Model name in the source."""
    seq: int
    """Sequence length."""
    gpus: int
    """GPUs in the run."""
    micro_batch: int
    """Sequences per micro-batch per GPU."""
    accumulation: int
    """Micro-batches per optimizer step."""
    checkpointing: bool
    """Full activation checkpointing."""
    sharding: str = ""
    """FSDP sharding strategy."""
    precision: str = ""
    """Precision as published."""
    tokens_per_s_per_gpu: float = Field(gt=0)
    """Published throughput, tokens per second per GPU."""
    mfu: float | None = None
    """Published MFU, percent (their FLOP count)."""
    num_params: int | None = None
    """Published parameter count (embeddings included)."""


class HeldOut(Strict):
    """A published run kept out of the fit, to check it."""

    source: str
    """Key of the source."""
    what: str
    """The run in words, as published."""
    card: str
    """Catalog card closest to the hardware used."""
    params: float = Field(gt=0)
    """Parameters in matrix products (output head included)."""
    d_model: int
    """Hidden size."""
    layers: int
    """Blocks."""
    vocab: int
    """Vocabulary."""
    seq: int
    """Sequence length."""
    micro_batch: int
    """Sequences per micro-batch per GPU."""
    checkpointing: bool
    """Full activation checkpointing (selective checkpointing counts as none)."""
    gpus: int
    """GPUs in the run."""
    tokens_per_s_per_gpu: float = Field(gt=0)
    """Published throughput, tokens per second per GPU."""
    software_year: int
    """Year of the software the run used."""
    note: str = ""
    """How it differs from the fitted runs."""


class Published(Strict):
    """The published rows the fit used."""

    excluded: list[str] = []
    """Published rows left out, and why."""
    rows: list[Row] = Field(min_length=1)
    """Every row the fit used."""


class Efficiency(Strict):
    """The efficiency data file: sources, every row used, and the fit."""

    sources: list[Source] = Field(min_length=1)
    """Where the figures come from."""
    fit: Fit
    """The fitted model."""
    cards: dict[str, str]
    """Catalog card each fitted source's rows ran on (the nearest the catalog has)."""
    shapes: dict[str, Shape]
    """Shapes of the fitted models, by name."""
    published: Published
    """The rows fitted on."""
    held_out: list[HeldOut] = []
    """Published runs kept out of the fit."""
    encoder: EncoderCalibration | None = None
    """The encoder serving calibration of the embedding throughput."""

    @property
    def rows(self) -> list[Row]:
        """Every row the fit used."""
        return self.published.rows


FIT_ENDS = "# ---- Above: the fit a plan reads."
"""The line of the data file that ends the part a plan reads: every plan on entered
figures checks them against the analytic tier, and parsing the published rows too adds
about 15 ms to a headless plan (tomllib on 209 inline tables)."""

_EFF: Efficiency | None = None
_FIT: Fit | None = None


def load_efficiency() -> Efficiency:
    """The shipped efficiency data, sources and rows included (read once)."""
    global _EFF
    if _EFF is None:
        res = shipped("efficiency.toml")
        name = str(res)
        try:
            _EFF = Efficiency.model_validate(parse_toml(res.read_bytes(), name))
        except ValidationError as exc:
            raise from_validation(exc, name) from None
    return _EFF


def load_fit() -> Fit:
    """The fitted model alone: the head of the data file, above `FIT_ENDS` (read once)."""
    global _FIT
    if _EFF is not None:
        return _EFF.fit
    if _FIT is None:
        res = shipped("efficiency.toml")
        name = str(res)
        head = res.read_text(encoding="utf-8").split(FIT_ENDS, 1)[0]
        try:
            _FIT = Fit.model_validate(parse_toml(head.encode(), name).get("fit"))
        except ValidationError as exc:
            raise from_validation(exc, name) from None
    return _FIT


class Work(NamedTuple):
    """What the efficiency model needs of a training step."""

    gemm: float
    """FLOPs in matrix products (recompute included)."""
    attn: float
    """FLOPs in attention products (recompute included)."""
    d_model: float
    """Hidden width (estimated from the parameters when not known)."""
    tokens: float
    """Tokens per micro-batch (b · s)."""
    checkpointing: bool
    """Full activation checkpointing."""


def width_of(params: float) -> float:
    """A transformer's hidden width guessed from its parameters (`WIDTH_PER_LAYER`)."""
    return (WIDTH_PER_LAYER * params / 12.0) ** (1.0 / 3.0)


def per_token(params: float, layers: int, d_model: int, seq: int, head: float,
              checkpointing: bool) -> tuple[float, float]:
    """(gemm, attn) FLOPs per token of a training step, as the analytic tier counts them:
    checkpointing recomputes the blocks' forward pass (not the head's)."""
    gemm = 6.0 * params + (2.0 * (params - head) if checkpointing else 0.0)
    attn = 12.0 * layers * d_model * seq + (4.0 * layers * d_model * seq if checkpointing
                                            else 0.0)
    return gemm, attn


def chip_fit(chip: str, fit: Fit) -> tuple[str, ChipFit]:
    """(fitted chip, its model) used for `chip`."""
    if chip in fit.chips:
        return chip, fit.chips[chip]
    return fit.reference_chip, fit.chips[fit.reference_chip]


def seconds_on_anchor(work: Work, cf: ChipFit, fit: Fit, peak_tflops: float) -> float:
    """Step time on the fitted chip's own card."""
    g = work.d_model / (work.d_model + cf.width_scale)
    overhead = 1.0 + fit.micro_batch_tokens / max(work.tokens, 1.0)
    ckpt = fit.checkpointing if work.checkpointing else 1.0
    return ((work.gemm / g + work.attn / cf.attention) * ckpt * overhead
            / (cf.level * peak_tflops * 1e12))


def utilization(work: Work, cf: ChipFit, fit: Fit) -> float:
    """Counted FLOPs over (time × peak) on the fitted chip's card."""
    return (work.gemm + work.attn) / (seconds_on_anchor(work, cf, fit, 1.0) * 1e12)


def log_band(residuals: list[float], floor: float = 0.15) -> tuple[float, float]:
    """(low, high) multipliers of the typical time from log residuals (log published time
    over predicted): their 5th and 95th percentiles, never narrower than ± `floor`."""
    xs = sorted(residuals)
    if not xs:
        return 1.0 / (1.0 + floor), 1.0 + floor

    def q(p: float) -> float:
        i = p * (len(xs) - 1)
        lo = math.floor(i)
        hi = min(lo + 1, len(xs) - 1)
        return xs[lo] + (xs[hi] - xs[lo]) * (i - lo)

    return min(math.exp(q(0.05)), 1.0 / (1.0 + floor)), max(math.exp(q(0.95)), 1.0 + floor)

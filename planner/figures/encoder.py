"""Embedding throughput before measuring: the encoder's FLOPs per token at the share of the
dense peak published encoder servers reach (`[encoder]` of `presets/efficiency.toml`).

Per padded token a BERT-family encoder costs 2 · (matrix-product weights) + 4 · layers ·
d_model · seq FLOPs (the attention products over the padded length). The share of the dense
fp16 peak is the geometric mean over Infinity's published end-to-end servers that run fused
attention with dynamic batching (TEI, Infinity on torch, TensorRT, ONNX); their spread is
the range, never narrower than ±15 %. Published conditions differ from a planned batch:
fp16, dynamic batching without padding, an HTTP server in the loop, an L4 (Ada, 72 W);
every figure says so.

From the published device to a catalog card the throughput moves by the cross-card rule
fitted on Lambda's tables (`throughput.toml`), with the device's datasheet peak and memory
bandwidth; its range widens by that rule's published spread for the same generation.
"""

import math

from pydantic import Field

from planner.figures.calibration import Calibration, load_calibration, spread, tau, tau_of
from planner.spec.base import Strict
from planner.spec.catalog import Card, Catalog, Dtype

HALF_CONDITIONS = "fp16, dynamic batching, an HTTP server in the loop"
"""How the published half-precision calibration ran (every such figure's note says so)."""
FULL_CONDITIONS = "fp32, sentence-transformers encode() in batches of 32"
"""How the published fp32 calibration ran."""


class EncoderShape(Strict):
    """A published encoder's shape."""

    d_model: int = Field(ge=1)
    """Hidden size."""
    layers: int = Field(ge=1)
    """Blocks."""
    ffn: int = Field(ge=1)
    """MLP hidden size."""


class ServerRow(Strict):
    """One published server's throughput."""

    server: str
    """The server as published."""
    requests_per_s: float = Field(gt=0)
    """Published requests per second."""
    fused: bool = True
    """Fused attention with dynamic batching (in the fit); False: left out, with why."""
    note: str = ""
    """Why it is left out, or what it ran."""


class LaunchRow(Strict):
    """One encoder's published queries and passages per second (the launch term's fit)."""

    model: str
    """The encoder as published."""
    shape: EncoderShape
    """Its shape."""
    queries_per_s: float = Field(gt=0)
    """Short queries encoded per second."""
    docs_per_s: float = Field(gt=0)
    """Passages encoded per second."""
    held_out: bool = False
    """Kept out of the fit, to check it."""


class SentenceRow(Strict):
    """One encoder's published sentences per second (lengths not published)."""

    model: str
    """The encoder as published."""
    shape: EncoderShape
    """Its shape."""
    sentences_per_s: float = Field(gt=0)
    """Sentences encoded per second."""


class SentenceTable(Strict):
    """Published sentences per second of several encoders on one device (held out)."""

    source: str
    """Key of the source (in `sources`)."""
    rows: list[SentenceRow] = Field(min_length=2)
    """Every encoder published."""


class Launch(Strict):
    """The fixed time every layer of an eager forward costs per batch, whatever its width,
    fitted on published encoding speeds of encoders of several widths and depths."""

    source: str
    """Key of the source (in `sources`)."""
    device: str
    """The published device and stack."""
    batch: int = Field(ge=1)
    """Sentences per batch in the published runs."""
    query_tokens: float = Field(gt=0)
    """Padded tokens of a query (assumed where not published: see `lengths_note`)."""
    passage_tokens: float = Field(gt=0)
    """Padded tokens of a passage."""
    lengths_note: str
    """Where the lengths come from."""
    per_layer_s: float = Field(ge=0)
    """The fitted time per layer per batch, seconds."""
    level_tflops: float = Field(gt=0)
    """The fitted fp32 rate of the device at full width (width factor 1), TFLOPS."""
    band_low: float = Field(gt=0, le=1)
    """Low multiplier of the fp32 estimate: the fit's worst residual, at least −15 %."""
    band_high: float = Field(ge=1)
    """High multiplier: the fit's worst residual the other way, at least +15 %."""
    peak_tflops: float = Field(gt=0)
    """The device's dense fp32 peak."""
    bandwidth_gbps: float = Field(gt=0)
    """Its memory bandwidth, GB/s."""
    chip: str
    """Its chip (for the cross-card rule's efficiency; unfitted chips take 1)."""
    device_note: str = ""
    """What is assumed of the device."""
    rows: list[LaunchRow] = Field(min_length=2)
    """Every published encoder, fitted or held out."""
    sentences: SentenceTable | None = None
    """A held-out table of sentences per second."""


class EncoderCalibration(Strict):
    """The published encoder serving benchmark and the share of the peak it implies."""

    source: str
    """Key of the source (in `sources`)."""
    device: str
    """The published device."""
    peak_tflops: float = Field(gt=0)
    """Its dense fp16 tensor peak."""
    bandwidth_gbps: float = Field(gt=0)
    """Its memory bandwidth, GB/s."""
    chip: str
    """Chip whose fitted cross-card efficiency the device takes."""
    model: str
    """The encoder benchmarked."""
    shape: EncoderShape
    """Its shape."""
    tokens_per_request: float = Field(gt=0)
    """Tokens in one request."""
    sentences_per_request: int = Field(ge=1)
    """Sentences in one request."""
    rows: list[ServerRow] = Field(min_length=1)
    """Every server published."""
    shapes: dict[str, EncoderShape] = {}
    """Shapes of encoders a preset may name (`embedding.model`), for the analytic tier."""
    launch: Launch | None = None
    """The per-layer, per-batch launch term (none: compute alone)."""


def per_token_flops(shape: EncoderShape, seq: float) -> float:
    """Forward FLOPs per padded token at padded length `seq`."""
    matmul = shape.layers * (4 * shape.d_model ** 2 + 2 * shape.d_model * shape.ffn)
    return 2.0 * matmul + 4.0 * shape.layers * shape.d_model * seq


def shares(cal: EncoderCalibration) -> list[float]:
    """Share of the device's dense peak each fused server reaches."""
    seq = cal.tokens_per_request / cal.sentences_per_request
    flops = per_token_flops(cal.shape, seq)
    return [r.requests_per_s * cal.tokens_per_request * flops / (cal.peak_tflops * 1e12)
            for r in cal.rows if r.fused]


def share_band(cal: EncoderCalibration, floor: float = 0.15) -> tuple[float, float, float]:
    """(geometric-mean share, low, high multipliers of it)."""
    xs = shares(cal)
    mean = math.exp(sum(math.log(x) for x in xs) / len(xs))
    return (mean, min(min(xs) / mean, 1 / (1 + floor)), max(max(xs) / mean, 1 + floor))


def width_factor(d_model: float, cal: EncoderCalibration, width_scale: float) -> float:
    """How much less (or more) of the peak an encoder of width `d_model` reaches than the
    benchmarked one: the width saturation g(d) = d / (d + d0) of the training fit
    (`planner.figures.efficiency`; `width_scale` is its d0 for the benchmarked chip)."""

    def g(d: float) -> float:
        return d / (d + width_scale)

    return g(d_model) / g(cal.shape.d_model)


def launch_s_per_token(layers: int, batch_tokens: float, cal: EncoderCalibration) -> float:
    """Seconds per padded token the per-layer launch term adds to a batch of
    `batch_tokens` padded tokens through `layers` layers."""
    if cal.launch is None or layers <= 0 or batch_tokens <= 0:
        return 0.0
    return layers * cal.launch.per_layer_s / batch_tokens


def _half(cal: EncoderCalibration, d_model: float, width_scale: float, ref: Card,
          dtype: Dtype, lam: Calibration) -> tuple[float, float, float, float, str]:
    """(FLOP rate at width `d_model` on the published device, its low and high multipliers,
    the device's τ, and in words) for a half-precision run: Infinity's servers."""
    share, lo, hi = share_band(cal)
    width = width_factor(d_model, cal, width_scale)
    at = "" if width == 1.0 else f", × {width:.2f} for width {d_model:.0f}"
    words = (f"{share:.0%} of the dense peak on the {cal.device} as published for {cal.model} "
             f"({cal.source}; {HALF_CONDITIONS}){at}")
    return (share * width * cal.peak_tflops * 1e12, lo, hi,
            tau_of(cal.peak_tflops, cal.bandwidth_gbps, cal.chip, ref, dtype, lam), words)


def _full(launch: Launch, d_model: float, width_scale: float, ref: Card,
          lam: Calibration) -> tuple[float, float, float, float, str]:
    """`_half` for an fp32 run: the level fitted on sentence-transformers' V100 speeds."""
    g = d_model / (d_model + width_scale)
    words = (f"{launch.level_tflops / launch.peak_tflops * g:.0%} of the fp32 peak on the "
             f"{launch.device} as published ({launch.source}; {FULL_CONDITIONS}; fitted level "
             f"{launch.level_tflops:.1f} TFLOPS × width factor {g:.2f})")
    return (launch.level_tflops * g * 1e12, launch.band_low, launch.band_high,
            tau_of(launch.peak_tflops, launch.bandwidth_gbps, launch.chip, ref, "fp32", lam),
            words)


def tokens_per_s(flops_per_token: float, d_model: float, dst_key: str, catalog: Catalog,
                 dtype: Dtype, cal: EncoderCalibration, width_scale: float,
                 layers: int = 0, batch_tokens: float = 0.0
                 ) -> tuple[float, float, float, str]:
    """(typical, low, high, note): padded tokens per second of one card `dst_key` for an
    encoder of width `d_model` (`width_scale`: see `width_factor`) and `layers` layers,
    run in batches of `batch_tokens` padded tokens (0: the launch term left out), in
    `dtype`: fp32 from sentence-transformers' fp32 speeds, any other precision from the
    fp16 serving benchmark."""
    lam = load_calibration()
    dst, ref = catalog.get(dst_key), catalog.get(lam.reference_card)
    fp32 = dtype == "fp32" and cal.launch is not None
    rate: Dtype = "fp32" if fp32 else ("bf16" if dtype == "fp8" else dtype)
    if fp32:
        assert cal.launch is not None
        flops, lo, hi, src_tau, words = _full(cal.launch, d_model, width_scale, ref, lam)
    else:
        flops, lo, hi, src_tau, words = _half(cal, d_model, width_scale, ref, rate, lam)
    moved = src_tau / tau(dst, ref, rate, lam)
    typical = flops / flops_per_token * moved
    peak = dst.compute_tflops(rate)
    # Lambda's per-model spread between the benchmarked generation's card and this one;
    # Lambda publishes no V100, so the fp32 path takes the widest spread of any card.
    proxy = "v100" if fp32 else {"AD102": "rtx6000ada"}.get(cal.chip, lam.reference_card)
    s_lo, s_hi = spread(proxy, dst_key, lam)
    extra = launch_s_per_token(layers, batch_tokens, cal)

    def with_launch(r: float) -> float:
        return 1.0 / (1.0 / r + extra)

    launched = with_launch(typical)
    tail = ""
    if extra > 0 and cal.launch is not None:
        tail = (f"; plus {cal.launch.per_layer_s * 1e6:.0f} µs per layer per batch of kernel "
                f"launches ({cal.launch.source}): {1 - launched / typical:.0%} of the time at "
                f"{batch_tokens:.0f} tokens per batch")
    note = (f"{flops_per_token:.3g} FLOPs per padded token in {rate}: {words}, moved to "
            f"{dst_key} by the calibrated cross-card rule (×{moved:.2f}): "
            f"{typical * flops_per_token / (peak * 1e12):.0%} of its {rate} peak{tail}")
    return (launched, with_launch(typical * lo * s_lo), with_launch(typical * hi * s_hi),
            note)

"""The analytic embedding throughput against published encoder speeds: prints them, asserts
nothing. Part of `python benchmarks/bench_cross_card.py`; runs alone too:

    python benchmarks/bench_encoder.py

- Infinity's end-to-end servers on an L4 (bge-large, fp16): the share of the dense peak
  they reach, the half-precision calibration;
- sentence-transformers' V100 speeds (MS MARCO queries and passages of four encoders,
  fp32, batch 32): the per-layer launch term and the fp32 level, fitted on three encoders,
  with MiniLM-L12 held out, the refit at other assumed lengths, and the fit without the
  launch term beside it; the held-out sentence table's ratios between encoders;
- the estimate of each shipped encoder on a few cards, in both precisions.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from planner.figures.efficiency import Efficiency, chip_fit, load_efficiency
from planner.figures.encoder import (
    EncoderCalibration,
    per_token_flops,
    share_band,
    tokens_per_s,
)
from planner.figures.encoder_fit import (
    LaunchFit,
    fit_launch,
    held_out_errors,
    sentence_ratios,
    sentence_time,
)
from planner.spec.catalog import Catalog, load_catalog


def _servers(cal: EncoderCalibration) -> None:
    seq = cal.tokens_per_request / cal.sentences_per_request
    flops = per_token_flops(cal.shape, seq)
    mean, lo, hi = share_band(cal)
    print(f"\nEncoder serving calibration, half precision ({cal.source}: {cal.model} on the "
          f"{cal.device}, {cal.peak_tflops:g} TFLOPS dense fp16; {seq:.0f} tokens per "
          f"sentence, {flops:.3g} FLOPs per token):")
    for r in cal.rows:
        tps = r.requests_per_s * cal.tokens_per_request
        share = tps * flops / (cal.peak_tflops * 1e12)
        used = "fit" if r.fused else "left out"
        print(f"  {r.server:<42} {r.requests_per_s:5.2f} req/s = {tps:8.0f} tokens/s = "
              f"{share:.1%} of peak; analytic {mean * cal.peak_tflops * 1e12 / flops:8.0f} "
              f"({mean * cal.peak_tflops * 1e12 / flops / tps - 1:+.0%}) [{used}]")
    print(f"  share of the peak {mean:.1%}, range ×{lo:.2f}–×{hi:.2f}")


def _rows(cal: EncoderCalibration, fit: LaunchFit, d0: float, label: str) -> None:
    launch = cal.launch
    assert launch is not None
    print(f"  {label}: launch {fit.per_layer_s * 1e6:.0f} µs per layer per batch, level "
          f"{fit.level_flops / 1e12:.2f} TFLOPS at full width")
    for r in launch.rows:
        for what, s, p in (("queries", launch.query_tokens, r.queries_per_s),
                           ("passages", launch.passage_tokens, r.docs_per_s)):
            t = sentence_time(r.shape, s, launch.batch, fit.level_flops, fit.per_layer_s, d0)
            used = "held out" if r.held_out else "fit"
            print(f"    {r.model:<28} {what:<8} published {p:7.0f}/s  analytic "
                  f"{1 / t:7.0f}/s  error {1 / t / p - 1:+6.1%}  [{used}]")


def _launch(cal: EncoderCalibration, d0: float) -> None:
    launch = cal.launch
    assert launch is not None
    print(f"\nEncoder launch term and fp32 level ({launch.source}: {launch.device}, batch "
          f"{launch.batch}; {launch.query_tokens:g}-token queries and "
          f"{launch.passage_tokens:g}-token passages, {launch.lengths_note}):")
    fit = fit_launch(launch, d0)
    _rows(cal, fit, d0, f"fit (stored: {launch.per_layer_s * 1e6:.1f} µs, "
                        f"{launch.level_tflops:.2f} TFLOPS)")
    alone = fit_launch(launch, d0, per_layer_s=0.0)
    _rows(cal, alone, d0, "compute alone (no launch term)")
    sse = sum(e * e for e in fit.residuals)
    print(f"  sum of squared log errors on the fitted rows: {sse:.4f} with the launch term, "
          f"{sum(e * e for e in alone.residuals):.4f} without")
    for q, p in ((8.0, 64.0), (12.0, 100.0)):
        other = fit_launch(launch.model_copy(update={"query_tokens": q, "passage_tokens": p}),
                           d0)
        worst = max(abs(e) for _, e in held_out_errors(
            launch.model_copy(update={"query_tokens": q, "passage_tokens": p}), other, d0))
        print(f"  lengths {q:g}/{p:g} tokens: launch {other.per_layer_s * 1e6:.0f} µs, level "
              f"{other.level_flops / 1e12:.2f} TFLOPS, held-out worst {worst:.1%}")
    if launch.sentences is not None:
        print(f"  held-out sentence table ({launch.sentences.source}; lengths not published), "
              "speed relative to its slowest encoder:")
        for tokens in (launch.query_tokens, 20.0, launch.passage_tokens):
            cells = ", ".join(f"{m} ×{pub:.2f} published, ×{got:.2f} analytic"
                              for m, pub, got in sentence_ratios(launch, fit, d0, tokens)
                              if pub != 1.0)
            print(f"    at {tokens:g} tokens: {cells}")


def _cards(cal: EncoderCalibration, catalog: Catalog, d0: float) -> None:
    print("\nAnalytic throughput of the shipped encoders (32 texts per batch, launch term "
          "included), padded tokens per second:")
    for model, shape in cal.shapes.items():
        seq = 512 if shape.layers > 6 else 256
        for dtype in ("fp32", "fp16"):
            cells = []
            for card in ("a6000", "a100-80", "h100-sxm", "l40s", "rtx4090"):
                t, low, high, _ = tokens_per_s(per_token_flops(shape, seq), shape.d_model,
                                               card, catalog, dtype, cal, d0, shape.layers,
                                               32.0 * seq)
                cells.append(f"{card} {t / 1e3:,.0f}k ({low / 1e3:,.0f}–{high / 1e3:,.0f}k)")
            print(f"  {model} at {seq} tokens, {dtype}: {'; '.join(cells)}")


def encoder_section(eff: Efficiency, catalog: Catalog) -> None:
    """Print the encoder part of the analytic section."""
    cal = eff.encoder
    assert cal is not None
    d0 = chip_fit(cal.chip, eff.fit)[1].width_scale
    _servers(cal)
    if cal.launch is not None:
        _launch(cal, d0)
    _cards(cal, catalog, d0)


if __name__ == "__main__":
    encoder_section(load_efficiency(), load_catalog())

"""The analytic tier's efficiency model (`presets/efficiency.toml`): the data loads and is
the least-squares fit of its rows; the range is never narrower than ±15 %; the held-out
published runs lie within 25 %; utilization rises with width and tokens per micro-batch
and saturates; every shipped preset's analytic figures lie within 2× of its entered ones;
the all-reduce term of a run on several cards counts its fitted exposed share."""

from __future__ import annotations

import math

import pytest

from planner.figures.analytic_tier import analytic_on, check_entered
from planner.figures.efficiency import ChipFit, Work, chip_fit, load_efficiency, utilization
from planner.figures.efficiency_fit import (
    fit_exposure,
    fit_rows,
    held_work,
    residuals,
    row_work,
)
from planner.figures.encoder import per_token_flops, share_band, shares, tokens_per_s, width_factor
from planner.figures.estimates import figures_on
from planner.figures.multicard import multi_card
from planner.figures.scaling import analytic_step_time
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset, shipped_presets


def test_the_fit_data_loads_with_its_sources_and_every_row() -> None:
    eff, catalog = load_efficiency(), load_catalog()
    assert len(eff.rows) == 209
    keys = {s.key for s in eff.sources}
    assert {r.table for r in eff.rows} <= keys and {h.source for h in eff.held_out} <= keys
    for s in eff.sources:
        assert "/blob/" in s.url and len(s.url.split("/blob/")[1].split("/")[0]) == 40, s.key
    assert set(eff.cards.values()) <= set(catalog.cards)
    assert all(r.model in eff.shapes for r in eff.rows)
    # Physics checks of the copied rows: MPT's MFU counts all parameters and attention.
    for r in eff.rows:
        w = row_work(r, eff)
        peak = catalog.cards[eff.cards[r.table]].peak_tflops("bf16") * 1e12
        flops = 6 * (r.num_params or 0) + 12 * eff.shapes[r.model].layers * \
            eff.shapes[r.model].d_model * r.seq
        assert r.mfu is not None
        assert flops * r.tokens_per_s_per_gpu / peak * 100 == pytest.approx(r.mfu, rel=0.02)
        assert w.tokens == r.micro_batch * r.seq


def test_a_plan_reads_the_same_fit_from_the_head_of_the_file() -> None:
    import planner.figures.efficiency as module

    full = load_efficiency().fit
    saved = module._EFF, module._FIT
    module._EFF = module._FIT = None
    try:
        assert module.load_fit() == full
        assert module._EFF is None          # the published rows were not parsed
    finally:
        module._EFF, module._FIT = saved


def test_the_stored_fit_is_the_least_squares_one_and_its_band_comes_from_residuals() -> None:
    eff, catalog = load_efficiency(), load_catalog()
    refit = fit_rows(eff, catalog, eff.rows)
    for chip, cf in eff.fit.chips.items():
        r = refit.chips[chip]
        assert (r.level, r.width_scale, r.attention) == pytest.approx(
            (cf.level, cf.width_scale, cf.attention), rel=1e-3)
    assert refit.checkpointing == pytest.approx(eff.fit.checkpointing, rel=1e-3)
    assert refit.micro_batch_tokens == pytest.approx(eff.fit.micro_batch_tokens, rel=1e-3)
    res = residuals(eff, eff.fit, catalog)
    assert math.sqrt(sum(e * e for e in res) / len(res)) == pytest.approx(
        eff.fit.residual_rms, abs=1e-3)
    assert eff.fit.band_low <= 1 / 1.15 and eff.fit.band_high >= 1.15
    share, _ = fit_exposure(eff, catalog)
    assert share == pytest.approx(eff.fit.allreduce_exposed, abs=1e-3)


@pytest.mark.parametrize("card", ["a6000", "a100-80", "h100-sxm", "h200", "rtx4090", "l40s"])
def test_every_analytic_range_is_at_least_15_percent_each_way(card: str) -> None:
    work = Work(gemm=8e14, attn=1e14, d_model=2048, tokens=8192, checkpointing=False)
    span = analytic_step_time(9e14, card, load_catalog(), "bf16", work)
    assert span.fast <= span.typical / 1.15 * (1 + 1e-9)
    assert span.slow >= span.typical * 1.15 * (1 - 1e-9)


def test_held_out_published_runs_lie_within_25_percent() -> None:
    eff, catalog = load_efficiency(), load_catalog()
    assert eff.held_out and all(h.software_year >= 2023 for h in eff.held_out)
    for h in eff.held_out:
        tokens = h.micro_batch * h.seq
        w = held_work(h)
        per_step = w._replace(gemm=w.gemm * tokens, attn=w.attn * tokens)
        t = analytic_step_time(per_step.gemm + per_step.attn, h.card, catalog, "bf16",
                               per_step).typical
        published = tokens / h.tokens_per_s_per_gpu
        assert abs(t / published - 1) <= 0.25, h.what


def test_utilization_rises_with_width_and_tokens_and_saturates_below_the_level() -> None:
    eff = load_efficiency()
    for chip in eff.fit.chips:
        _, cf = chip_fit(chip, eff.fit)

        def u(d: float, tokens: float, cf: ChipFit = cf) -> float:
            return utilization(Work(gemm=1.0, attn=0.0, d_model=d, tokens=tokens,
                                    checkpointing=False), cf, eff.fit)

        widths = [u(d, 8192) for d in (256, 1024, 4096, 16384, 1e6)]
        assert widths == sorted(widths) and widths[-1] < cf.level
        tokens = [u(4096, t) for t in (128, 1024, 8192, 65536, 1e7)]
        assert tokens == sorted(tokens) and tokens[-1] < cf.level
    # A chip the table has no rows for takes the reference chip's model.
    assert chip_fit("AD102", eff.fit)[0] == eff.fit.reference_chip


@pytest.mark.parametrize("name", sorted(shipped_presets()))
def test_every_shipped_preset_s_analytic_figures_lie_within_2x_of_its_entered_ones(
        name: str) -> None:
    preset, _ = load_preset(name)
    catalog = load_catalog()
    if preset.embedding is not None:
        fig = analytic_on(preset, preset.campaign.card, catalog, "typical").embedding
        assert fig is not None
        a, e = fig.throughput_tokens_per_s, preset.embedding.throughput_tokens_per_s
        assert a is not None and a.source == "analytic"
        assert a.low is not None and a.high is not None and a.low < a.value < a.high
        # The published conditions, for the precision the run computes in.
        half = preset.embedding.run_dtype != "fp32"
        assert ("fp16, dynamic batching" if half else "fp32, sentence-transformers") in a.note
        if e is None:
            # A preset that gives no throughput plans on this very figure.
            planned = figures_on(preset, catalog, "typical").embedding
            assert planned is not None and planned.throughput_tokens_per_s == a
            return
        assert e.source == "entered"
        assert 0.5 <= a.value / e.value <= 2.0
        return
    assert check_entered(preset, catalog) == []
    card = preset.campaign.card
    entered = figures_on(preset, catalog, "typical").training
    analytic = analytic_on(preset, card, catalog, "typical").training
    assert entered is not None and analytic is not None
    for e, a in zip([entered.baseline, *entered.variants],
                    [analytic.baseline, *analytic.variants], strict=True):
        assert e.step_time_s.source == "entered" and a.step_time_s.source == "analytic"
        assert 0.5 <= a.step_time_s.value / e.step_time_s.value <= 2.0, a
        assert a.step_time_s.low is not None and a.step_time_s.high is not None


def test_a_run_on_several_cards_adds_the_exposed_share_of_its_all_reduce() -> None:
    cards = load_catalog().cards
    share = load_efficiency().fit.allreduce_exposed
    mc = multi_card(cards["a6000"], 4, 1_000_000_000)
    assert mc is not None
    ring = 2 * 3 / 4 * 4e9 / 32e9
    assert mc.allreduce_s == pytest.approx(ring)
    # At least the last 25 MiB bucket, which only starts after the backward pass.
    last = 2 * 3 / 4 * 25 * 2**20 / 32e9
    assert mc.exposed_s == pytest.approx(max(share * ring, last))
    assert mc.exposed_s <= mc.allreduce_s
    preset, _ = load_preset("ablation-7d")
    t = preset.training
    assert t is not None
    four = preset.model_copy(update={"ablation": t.model_copy(update={"cards_per_run": 4})})
    one = analytic_on(preset, "a6000", load_catalog(), "typical").training
    many = analytic_on(four, "a6000", load_catalog(), "typical").training
    assert one is not None and many is not None
    assert many.baseline.step_time_s.value > one.baseline.step_time_s.value
    assert "ring all-reduce" in many.baseline.step_time_s.note


def test_the_encoder_calibration_is_published_servers_share_of_the_peak() -> None:
    cal = load_efficiency().encoder
    assert cal is not None
    xs = shares(cal)
    assert len(xs) == sum(r.fused for r in cal.rows) == 4
    assert all(0.2 < x < 0.4 for x in xs)
    mean, lo, hi = share_band(cal)
    assert lo <= 1 / 1.15 and hi >= 1.15 and min(xs) / mean >= lo - 1e-12
    # Each published row, back through the planner's own estimate on that device.
    seq = cal.tokens_per_request / cal.sentences_per_request
    per_token = per_token_flops(cal.shape, seq)
    for x, row in zip(xs, [r for r in cal.rows if r.fused], strict=True):
        assert x * cal.peak_tflops * 1e12 / per_token == pytest.approx(
            row.requests_per_s * cal.tokens_per_request)
    # Narrower encoders reach less of the peak.
    d0 = chip_fit(cal.chip, load_efficiency().fit)[1].width_scale
    assert (width_factor(384, cal, d0) < width_factor(768, cal, d0)
            < width_factor(1024, cal, d0) == 1.0)
    t, low, high, note = tokens_per_s(per_token_flops(cal.shape, 512), 1024, "h100-sxm",
                                      load_catalog(), "bf16", cal, d0)
    assert low < t < high and "dynamic batching" in note

"""The analytic embedding throughput: the per-layer launch term is the least-squares fit of
its published rows and holds on the held-out ones; a small encoder loses more of its time
to it than a large one; and a preset that gives no throughput plans, exports and compares
on the analytic estimate, labelled with its range and the published conditions."""

from __future__ import annotations

import json
import math
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from planner.figures.efficiency import chip_fit, load_efficiency
from planner.figures.encoder import EncoderCalibration, launch_s_per_token
from planner.figures.encoder_fit import fit_launch, held_out_errors, sentence_ratios
from tests.conftest import plan_dict, shipped

CREATED = ["--created", "2026-01-01T00:00:00+00:00"]


def _cal() -> tuple[EncoderCalibration, float]:
    eff = load_efficiency()
    assert eff.encoder is not None and eff.encoder.launch is not None
    return eff.encoder, chip_fit(eff.encoder.chip, eff.fit)[1].width_scale


def test_the_launch_term_is_the_fit_of_its_published_rows_and_holds_on_held_out_ones() -> None:
    cal, d0 = _cal()
    launch = cal.launch
    assert launch is not None
    keys = {s.key for s in load_efficiency().sources}
    assert launch.source in keys and launch.sentences is not None
    assert launch.sentences.source in keys
    fit = fit_launch(launch, d0)
    assert fit.per_layer_s == pytest.approx(launch.per_layer_s, rel=0.01)
    assert fit.level_flops / 1e12 == pytest.approx(launch.level_tflops, rel=0.01)
    worst = (math.exp(min(fit.residuals)), math.exp(max(fit.residuals)))
    assert launch.band_low == pytest.approx(min(worst[0], 1 / 1.15), rel=1e-3)
    assert launch.band_high == pytest.approx(max(worst[1], 1.15), rel=1e-3)
    assert max(abs(e) for e in fit.residuals) < 0.15
    held = held_out_errors(launch, fit, d0)
    assert held and all(abs(err) <= 0.25 for _, err in held), held
    # The sentence table publishes no lengths: its ratios hold over queries to passages.
    for tokens in (launch.query_tokens, launch.passage_tokens):
        for model, published, analytic in sentence_ratios(launch, fit, d0, tokens):
            assert analytic / published == pytest.approx(1.0, abs=0.25), (model, tokens)


def test_compute_alone_fits_the_short_and_long_batches_worse() -> None:
    cal, d0 = _cal()
    launch = cal.launch
    assert launch is not None
    fit, alone = fit_launch(launch, d0), fit_launch(launch, d0, per_layer_s=0.0)
    assert alone.per_layer_s == 0.0 and fit.per_layer_s > 0
    assert sum(e * e for e in fit.residuals) < sum(e * e for e in alone.residuals) / 2


def test_a_small_encoder_on_short_batches_loses_more_to_launches_than_a_large_one() -> None:
    cal, _ = _cal()
    small = launch_s_per_token(6, 32 * 64, cal)
    large = launch_s_per_token(24, 32 * 512, cal)
    assert small > 0 and large > 0
    # Per token, per FLOP: MiniLM-L6 does ~1/28 of bge-large's work per token.
    assert small / 2.36e7 > 10 * large / 6.54e8


def _no_throughput(**embedding: Any) -> dict[str, Any]:
    data = shipped("embedding-7d")
    del data["embedding"]["throughput_tokens_per_s"]
    data["embedding"].update(embedding)
    return data


def test_a_preset_without_throughput_plans_on_the_analytic_estimate_with_its_range() -> None:
    plan = plan_dict(_no_throughput())
    t = plan.assumptions.throughput_tokens_per_s
    assert t is not None and t.source == "analytic" and t.card == "a6000"
    assert t.low is not None and t.high is not None and t.low <= t.value < t.high
    assert "fp16, dynamic batching" in t.note and "bge-large" in t.note
    assert plan.assumptions.estimate == "cautious" and t.value == t.low
    (w,) = [w for w in plan.warnings if "throughput is `analytic`" in w]
    assert f"{t.low:,.0f}–{t.high:,.0f} tokens/s" in w and "fp16, dynamic batching" in w
    assert not any("`entered` figure" in w for w in plan.warnings)
    entered = plan_dict(shipped("embedding-7d"))
    assert entered.summary.makespan_h != plan.summary.makespan_h


def test_an_unknown_encoder_without_throughput_names_the_field(tmp_path: Path,
                                                               capsys: Any) -> None:
    p = tmp_path / "preset.toml"
    p.write_text(tomli_w.dumps(_no_throughput(model="someone/unknown-encoder")))
    assert main(["--preset", str(p), *CREATED]) == 2
    err = capsys.readouterr().err
    assert "embedding.measure" in err and "Traceback" not in err


def test_a_preset_without_throughput_exports_compares_and_the_schema_says_so(
        tmp_path: Path, capsys: Any) -> None:
    p = tmp_path / "preset.toml"
    p.write_text(tomli_w.dumps(_no_throughput()))
    out = tmp_path / "plan"
    assert main(["--preset", str(p), "--out", str(out), *CREATED]) == 0
    text = capsys.readouterr().out
    assert "throughput is `analytic`" in text and "Estimates" in text
    saved = tomllib.loads((out / "plan.toml").read_text())
    t = saved["assumptions"]["throughput_tokens_per_s"]
    assert t["source"] == "analytic" and t["low"] < t["high"]
    assert main(["--preset", str(p), "--json", *CREATED]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert any("throughput is `analytic`" in w for w in doc["warnings"])
    assert main(["compare", "--preset", str(p), "--cards", "a6000,h100-sxm", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["provenance"] for r in rows] == [["analytic"], ["analytic"]]
    assert rows[1]["throughput_tokens_per_s"] > rows[0]["throughput_tokens_per_s"]
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    field = schema["$defs"]["Embedding"]["properties"]["throughput_tokens_per_s"]
    assert "analytic" in field["description"] and field["default"] is None
    assert "throughput_tokens_per_s" not in schema["$defs"]["Embedding"].get("required", [])


@pytest.mark.parametrize(("command", "measure", "dtype"), [
    ("campaign-planner embed {plan} --version {version} --part {part}/{parts}", None, "fp32"),
    ("campaign-planner embed {plan} --dtype bf16 --part {part}/{parts}", None, "bf16"),
    ("campaign-planner embed {plan} --dtype=fp16 --part {part}/{parts}", "fp32", "fp16"),
    ("my-server --part {part}/{parts}", None, "bf16"),
    ("my-server --part {part}/{parts}", "fp32", "fp32"),
])
def test_the_run_computes_in_the_precision_its_command_gives(command: str, measure: str | None,
                                                              dtype: str) -> None:
    from planner.spec.embedding import Embedding

    data = shipped("embedding-7d")["embedding"]
    data["command"] = command
    if measure is not None:
        data["measure"] = {"reference": "encoder", "dtype": measure}
    assert Embedding.model_validate(data).run_dtype == dtype


def test_an_fp32_run_is_estimated_from_the_fp32_speeds_and_is_slower() -> None:
    half = plan_dict(_no_throughput())
    data = _no_throughput()
    data["embedding"]["command"] = data["embedding"]["command"].replace(" --dtype fp16", "")
    full = plan_dict(data)
    h, f = half.assumptions.throughput_tokens_per_s, full.assumptions.throughput_tokens_per_s
    assert h is not None and f is not None and f.source == "analytic"
    assert "in fp32" in f.note and "sentence-transformers" in f.note and "in fp16" in h.note
    # bge-large at 512 tokens: an A6000's fp32 peak is a quarter of its fp16 one.
    assert f.value < h.value / 2


def test_the_fit_screen_gives_the_analytic_throughput_with_its_range_and_source() -> None:
    from screens.fit import provenance

    plan = plan_dict(_no_throughput())
    t = plan.assumptions.throughput_tokens_per_s
    assert t is not None and t.low is not None and t.high is not None
    text = provenance(plan)
    assert (f"throughput {t.value:,.0f} tokens/s per card ({t.low:,.0f}–{t.high:,.0f}): "
            "analytic") in text
    assert "fp16, dynamic batching" in text


def test_a_measurement_in_another_precision_than_the_runs_is_flagged() -> None:
    pytest.importorskip("torch")
    from planner.campaign import plan_campaign
    from planner.measure import measure_preset
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import parse_preset
    from tests.conftest import CREATED as AT
    from tests.test_measure_run import TINY

    data = shipped("embedding-3d")
    data["embedding"].update(measure={**TINY, "reference": "encoder"}, truncation_tokens=64,
                             token_budget=512)
    preset = parse_preset(data, "emb.toml")
    m = measure_preset(preset, load_catalog(), threads=1)
    assert m.dtype == "fp32" and preset.embedding is not None
    assert preset.embedding.run_dtype == "fp32"
    # The same timing as if taken in bf16 on a GPU, for runs that compute in fp32.
    gpu = m.model_copy(update={"dtype": "bf16", "device": m.device.model_copy(
        update={"kind": "cuda", "name": "NVIDIA RTX A6000"})})
    plan = plan_campaign(preset, load_catalog(), measurements=gpu, created=AT)
    assert any("measured in bf16, the runs compute in fp32" in w for w in plan.warnings)
    same = plan_campaign(preset, load_catalog(), measurements=m, created=AT)
    assert not any("the runs compute in" in w for w in same.warnings)

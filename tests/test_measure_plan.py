"""Planning from measurements (no torch needed): provenance into plan.toml, scaling across
cards, micro-batch decisions, mismatches, the file format, `compare` and `check`."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from planner.advise.compare import compare_cards
from planner.campaign import plan_campaign
from planner.cli.main import main
from planner.errors import InputError
from planner.figures.measured import workload_fingerprint
from planner.figures.measurements import (
    BatchChoice,
    ConfigMeasurement,
    Device,
    Measurements,
    Memory,
    StepTime,
    Workload,
    load_measurements,
    measurements_toml,
)
from planner.figures.scaling import analytic_step_time, mfu_flags, scale_step_time
from planner.measure.stack import check_stack, kernel_support
from planner.planfile.export import read_plan
from planner.spec.catalog import Dtype, load_catalog
from planner.spec.loading import load_preset
from planner.spec.preset import Preset
from tests.conftest import CREATED
from tests.run_fixtures import harness as h

CARDS = {"a6000": ("NVIDIA RTX A6000", "8.6"), "a40": ("NVIDIA A40", "8.6"),
         "h100-sxm": ("NVIDIA H100 80GB HBM3", "9.0")}


def measurements(preset: Preset, device: str = "a6000", *, peak: float = 30.0,
                 batch: BatchChoice | None = None, kind: str = "cuda") -> Measurements:
    """Measurements as `measure` writes them, for every configuration of `preset`."""
    t = preset.training
    assert t is not None
    name, cc = CARDS.get(device, ("CPU Test", ""))
    configs = []
    for i, (cfg, factors) in enumerate([("baseline", t.baseline.factors)] + [
            (v.name, {**t.baseline.factors, **v.changes}) for v in t.variants]):
        configs.append(ConfigMeasurement(
            config=cfg, factors=factors, params=350_000_000, trainable_params=350_000_000,
            micro_batch=(batch.micro_batch or t.micro_batch) if batch else t.micro_batch,
            accumulation=(batch.accumulation or t.accumulation) if batch else t.accumulation,
            step_time=StepTime(median_s=2.0 + 0.1 * i, p10_s=1.9, p90_s=2.3, steps=20),
            memory=(Memory(method="cuda", peak_gib=peak + i, allocated_gib=peak + i - 1,
                           reserved_gib=peak + i, num_alloc_retries=0, per_sample_gib=1.5)
                    if kind == "cuda" else
                    Memory(method="fake-tensor", peak_gib=peak + i, weights_gib=5.2,
                           gradients_gib=5.2, optimizer_gib=10.4, activations_gib=peak - 21,
                           per_sample_gib=1.5)),
            batch=batch, flops_per_step=6 * 350e6 * 64 * 2048, mfu=0.4))
    return Measurements(
        preset=preset.campaign.name, kind=preset.campaign.kind, date="2026-01-01T00:00:00+00:00",
        torch="2.7.1+cu126", cuda="12.6" if kind == "cuda" else "", dtype="bf16",
        target_card=preset.campaign.card,
        device=Device(name=name, kind=kind, card=device if kind == "cuda" else "",
                      compute_capability=cc),
        workload=Workload(source="reference", spec={"reference": "transformer"},
                          micro_batch=t.micro_batch, accumulation=t.accumulation,
                          fingerprint=workload_fingerprint(preset)),
        configs=configs, file="m.toml")


@pytest.fixture
def preset() -> Preset:
    return load_preset("ablation-7d")[0]


def test_measured_figures_and_their_provenance_survive_into_plan_toml(
        preset: Preset, tmp_path: Path) -> None:
    catalog = load_catalog()
    plan = plan_campaign(preset, catalog, measurements=measurements(preset), created=CREATED)
    path = tmp_path / "plan.toml"
    h.write_plan(plan, path)
    back = read_plan(path)
    fig = back.assumptions.figures[0]
    assert fig.step_time_s.source == "measured" and fig.step_time_s.value == 2.0
    assert fig.step_time_s.device == "NVIDIA RTX A6000"
    assert "median of 20 steps" in fig.step_time_s.note
    assert fig.peak_memory_gib.source == "measured" and fig.peak_memory_gib.value == 30.0
    assert "max_memory_reserved" in fig.peak_memory_gib.note
    src = back.assumptions.measurements
    assert src is not None and src.device == "NVIDIA RTX A6000" and src.torch == "2.7.1+cu126"
    assert src.file == "m.toml" and src.dtype == "bf16"
    assert not any("rest on `entered` figures" in w for w in back.warnings)
    # The run durations follow the measured step time.
    assert back.runs[0].end_h - back.runs[0].start_h < 30000 * 3.6 / 3600


def test_a_measurement_on_another_card_is_scaled_and_never_beats_the_peak(
        preset: Preset) -> None:
    catalog = load_catalog()
    plan = plan_campaign(preset, catalog, measurements=measurements(preset, "a40"),
                         created=CREATED)
    fig = plan.assumptions.figures[0]
    assert fig.step_time_s.source == "scaled" and fig.step_time_s.label() == \
        "scaled from NVIDIA A40"
    assert "calibrated speed-up" in fig.step_time_s.note
    assert fig.step_time_s.low is not None and fig.step_time_s.high == fig.step_time_s.value
    assert fig.peak_memory_gib.source == "scaled"
    flops = 6 * 350e6 * 64 * 2048
    assert flops / fig.step_time_s.value <= catalog.cards["a6000"].bf16_tflops * 1e12


def test_a_cpu_measurement_is_a_smoke_test_memory_used_step_times_kept(
        preset: Preset) -> None:
    plain = plan_campaign(preset, load_catalog(), created=CREATED)
    plan = plan_campaign(preset, load_catalog(), created=CREATED,
                         measurements=measurements(preset, "cpu", kind="cpu"))
    assert "measured on CPU: memory used, step times kept" in plan.decisions
    for before, fig in zip(plain.assumptions.figures, plan.assumptions.figures, strict=True):
        assert fig.step_time_s == before.step_time_s
        assert fig.step_time_s.source == "entered"
        assert fig.peak_memory_gib.label() == "measured on CPU Test (fake-tensor estimate)"
    assert "weights 5.20" in plan.assumptions.figures[0].peak_memory_gib.note
    assert not any("differ" in w for w in plan.warnings)


def test_cpu_step_times_replace_the_card_s_only_when_asked(preset: Preset) -> None:
    plan = plan_campaign(preset, load_catalog(), created=CREATED, cpu_step_times=True,
                         measurements=measurements(preset, "cpu", kind="cpu"))
    fig = plan.assumptions.figures[0].step_time_s
    assert (fig.source, fig.value, fig.device) == ("measured", 2.0, "CPU Test")
    assert "--use-cpu-step-times" in fig.note
    assert "measured on CPU: memory used, step times kept" not in plan.decisions


def test_the_command_line_keeps_cpu_step_times_unless_told(
        preset: Preset, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.toml"
    path.write_text(measurements_toml(measurements(preset, "cpu", kind="cpu")))
    base = ["--preset", "ablation-7d", "--measurements", str(path), "--json",
            "--created", "2026-01-01T00:00:00+00:00"]
    assert main(base) == 0
    kept = json.loads(capsys.readouterr().out)
    assert main([*base, "--use-cpu-step-times"]) == 0
    used = json.loads(capsys.readouterr().out)
    assert kept != used
    assert "measured on CPU: memory used, step times kept" in json.dumps(kept)
    assert "measured on CPU: memory used, step times kept" not in json.dumps(used)


def test_a_cancelled_cpu_measurement_keeps_every_figure_it_did_not_measure(
        preset: Preset) -> None:
    plain = plan_campaign(preset, load_catalog(), created=CREATED)
    m = measurements(preset, "cpu", kind="cpu")
    untimed = [c.model_copy(update={"step_time": None}) for c in m.configs[1:3]]
    m = m.model_copy(update={"configs": [m.configs[0], *untimed], "partial": True,
                             "file": ""})
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED)
    figs = plan.assumptions.figures
    assert all(f.step_time_s == b.step_time_s for f, b in
               zip(figs, plain.assumptions.figures, strict=True))
    assert all(f.peak_memory_gib == b.peak_memory_gib for f, b in
               zip(figs[1:], plain.assumptions.figures[1:], strict=True))
    assert figs[0].peak_memory_gib.source == "measured"
    assert "the measurements are partial (stopped early): configurations not measured keep " \
           "their previous figures" in plan.warnings
    assert not any("differ" in w for w in plan.warnings)


def test_a_reduced_micro_batch_is_a_documented_decision(preset: Preset) -> None:
    choice = BatchChoice(card="a6000", budget_gib=46.0, method="cuda", largest=11, limit=64,
                         probes=6, oom_recoveries=2, micro_batch=8, accumulation=8,
                         reduced=True)
    plan = plan_campaign(preset, load_catalog(), created=CREATED,
                         measurements=measurements(preset, batch=choice, peak=40.0))
    assert any(d.startswith("baseline: micro-batch 8 × accumulation 8 keeps the effective "
                            "batch 64 on a6000 (largest micro-batch that fits is 11 by a cuda "
                            "batch search") for d in plan.decisions)
    run = plan.runs[0]
    assert (run.micro_batch, run.accumulation, run.effective_batch) == (8, 8, 64)
    assert "--micro-batch 8 --accumulation 8" in run.command


def test_without_a_search_for_the_card_the_per_sample_growth_decides(preset: Preset) -> None:
    # Measured for an 80 GB card at micro-batch 16: 52 GiB does not fit a 48 GB card, but
    # 1.5 GiB per sample brings micro-batch 8 to 40 GiB.
    m = measurements(preset, "a6000", peak=52.0)
    m = m.model_copy(update={"target_card": "a100-80"})
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED)
    assert plan.runs[0].micro_batch == 8
    assert any("estimated from the measured peak 52.00 GiB" in d for d in plan.decisions)


def test_measurements_of_another_workload_are_refused(preset: Preset) -> None:
    m = measurements(preset)
    bad = m.model_copy(update={"configs": [m.configs[0].model_copy(
        update={"factors": {"positional": "alibi"}}), *m.configs[1:]]})
    with pytest.raises(InputError) as info:
        plan_campaign(preset, load_catalog(), measurements=bad)
    assert (info.value.file, info.value.field) == ("m.toml", "configs[0].factors")
    other = m.model_copy(update={"workload": m.workload.model_copy(
        update={"fingerprint": "0" * 64})})
    with pytest.raises(InputError, match="other workload settings") as info:
        plan_campaign(preset, load_catalog(), measurements=other)
    assert info.value.field == "workload.fingerprint"


def test_unmeasured_configurations_keep_entered_figures_with_a_warning(preset: Preset) -> None:
    m = measurements(preset)
    m = m.model_copy(update={"configs": m.configs[:2], "partial": True})
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED)
    assert plan.assumptions.figures[2].step_time_s.source == "entered"
    assert any("layernorm is not in the measurements" in w for w in plan.warnings)
    assert any("is partial" in w for w in plan.warnings)


def test_measurements_file_round_trip_and_errors(preset: Preset, tmp_path: Path) -> None:
    m = measurements(preset)
    path = tmp_path / "m.toml"
    path.write_text(measurements_toml(m))
    back = load_measurements(path)
    assert back.configs == m.configs and back.file == str(path)
    text = path.read_text().replace("median_s = 2.0", "median_s = -1.0", 1)
    path.write_text(text)
    with pytest.raises(InputError) as info:
        load_measurements(path)
    assert info.value.file == str(path) and info.value.field == "configs[0].step_time.median_s"
    path.write_text(measurements_toml(m).replace('kind = "cuda"', 'kind = "tpu"'))
    with pytest.raises(InputError, match=r"device\.kind"):
        load_measurements(path)
    with pytest.raises(InputError, match="file not found"):
        load_measurements(tmp_path / "missing.toml")


CARD_KEYS = sorted(load_catalog().cards)


@given(t=st.floats(0.01, 100), flops=st.floats(1e9, 1e16),
       src=st.sampled_from(CARD_KEYS), dst=st.sampled_from(CARD_KEYS),
       dtype=st.sampled_from(["bf16", "fp16", "tf32", "fp32"]))
def test_scaled_times_never_imply_more_than_the_target_peak(
        t: float, flops: float, src: str, dst: str, dtype: Dtype) -> None:
    catalog = load_catalog()
    peak = (catalog.cards[dst].peak_tflops(dtype) or catalog.cards[dst].bf16_tflops) * 1e12
    span = scale_step_time(t, flops, src, dst, catalog, dtype)
    for x in (span.typical, span.fast, span.slow):
        assert flops / x <= peak * (1 + 1e-9)
    assert span.fast <= span.typical <= span.slow
    analytic = analytic_step_time(flops, dst, catalog, dtype)
    for x in (analytic.typical, analytic.fast, analytic.slow):
        assert flops / x <= peak * (1 + 1e-9)


def test_mfu_flags() -> None:
    assert mfu_flags(0.4) == [] and mfu_flags(None) == []
    assert "above 100%" in mfu_flags(1.3)[0] and "below 5%" in mfu_flags(0.01)[0]


# --- compare ---------------------------------------------------------------------------------

def test_compare_changes_only_the_card(preset: Preset) -> None:
    rows = compare_cards(preset, load_catalog(), ["a6000", "l40s", "a100-80"])
    assert [r.card for r in rows] == ["a6000", "l40s", "a100-80"]
    assert {r.runs_total for r in rows} == {18} and {r.cards for r in rows} == {4}
    a6000, l40s, a100 = rows
    assert a6000.provenance == ["entered"]
    assert l40s.provenance == ["scaled from NVIDIA RTX A6000"]
    # 61 GiB without activation checkpointing needs a micro-batch cut on 48 GB, not on 80.
    ckpt = {r.card: next(c for c in r.configs if c.config == "no-act-ckpt") for r in rows}
    assert ckpt["a6000"].micro_batch < 16 and ckpt["a100-80"].micro_batch == 16
    # Usable 79.18 GiB less the 0.75 GiB context and the 2 GiB margin.
    assert a100.configs[0].headroom_gib == pytest.approx(79.18 - 0.75 - 2 - 31.5)
    assert l40s.configs[0].step_time_s < a6000.configs[0].step_time_s


def test_compare_from_measurements_and_analytic(preset: Preset) -> None:
    catalog = load_catalog()
    rows = compare_cards(preset, catalog, ["a6000", "a40"], measurements(preset))
    assert rows[0].configs[0].step_time_source == "measured on NVIDIA RTX A6000"
    assert rows[1].configs[0].step_time_source == "scaled from NVIDIA RTX A6000"
    analytic = compare_cards(preset, catalog, ["a6000"], analytic=True)[0]
    assert set(analytic.provenance) == {"analytic"}


def test_compare_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--preset", "ablation-3d", "--cards", "a6000,l40s", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["card"] for r in rows] == ["a6000", "l40s"]
    assert main(["compare", "--preset", "ablation-3d"]) == 0
    text = capsys.readouterr().out
    assert "Memory headroom" in text and "Provenance" in text and "a100-80" in text
    assert main(["compare", "--cards", "a6000,nope"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--cards: unknown card 'nope'" in err


# --- check -----------------------------------------------------------------------------------

@pytest.mark.parametrize(("archs", "cc", "kind"), [
    (["sm_80", "sm_86", "sm_90"], "8.6", "exact"),
    (["sm_80", "sm_86", "sm_90"], "8.9", "binary"),     # sm_86 SASS runs on Ada
    (["sm_80", "sm_86"], "9.0", "none"),                # nothing 8.x runs on Hopper
    (["sm_80", "compute_80"], "9.0", "ptx"),            # unless PTX is there to JIT
    (["sm_90a"], "9.0", "exact"),
    (["sm_90a"], "10.0", "none"),
    ([], "8.6", "none"),
])
def test_kernel_support(archs: list[str], cc: str, kind: str) -> None:
    assert kernel_support(archs, cc)[0] == kind


def test_check_with_a_gpu_build_and_on_a_cpu_only_machine() -> None:
    catalog = load_catalog()
    facts: dict[str, Any] = {"torch": "2.7.1+cu126", "cuda": "12.6", "cudnn": 90100,
                             "arch_list": ["sm_80", "sm_86", "sm_90"], "devices": []}
    cards = {k: catalog.cards[k] for k in ("a6000", "rtx6000ada", "h100-sxm")}
    report = check_stack(cards, facts, order=("12.6", "2.7"), run_kernels=False)
    assert report.code == 3              # no GPU here to launch a kernel on
    details = " ".join(f.detail for f in report.findings)
    assert "sm_86 machine code runs on sm_89" in details
    facts["arch_list"] = ["sm_80", "sm_86"]
    assert check_stack({"h100-sxm": catalog.cards["h100-sxm"]}, facts).code == 1
    old = check_stack({"h100-sxm": catalog.cards["h100-sxm"]}, None, order=("11.7", "1.13"))
    assert old.code == 1
    assert check_stack(cards, None).code == 3


def test_check_cli_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["check", "--preset", "ablation-7d"])
    out = capsys.readouterr().out
    assert code in (0, 1, 3) and f"(exit {code})" in out and "a6000 (sm_86)" in out
    assert main(["check", "--card", "nope"]) == 2


def test_plan_with_measurements_loads_neither_torch_nor_the_ui(preset: Preset,
                                                               tmp_path: Path) -> None:
    path = tmp_path / "m.toml"
    path.write_text(measurements_toml(measurements(preset)))
    code = (
        "import sys\nfrom planner.cli.main import main\n"
        f"rc = main(['--preset', 'ablation-7d', '--measurements', {str(path)!r}, '--out', "
        f"{str(tmp_path / 'o')!r}])\n"
        "rc2 = main(['compare', '--preset', 'ablation-7d', '--measurements', "
        f"{str(path)!r}])\n"
        "import planner.measure\n"
        "print(rc, rc2, sorted(m for m in sys.modules if m.split('.')[0] in "
        "{'torch', 'textual', 'screens'}))\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip().splitlines()[-1] == "0 0 []"
    plan = read_plan(tmp_path / "o" / "plan.toml")
    assert plan.assumptions.figures[0].step_time_s.source == "measured"


def test_plan_cli_measurement_errors_are_one_line(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["--preset", "ablation-7d", "--measurements", str(tmp_path / "nope.toml"),
                 "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nope.toml: file not found" in err
    assert not out.exists()

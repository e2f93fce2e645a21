"""Factor sweeps: `[[ablation.sweeps]]` expands into one one-factor variant per level."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.campaign import fingerprint, plan_campaign
from planner.cli.main import main
from planner.errors import InputError
from planner.planfile.export import read_plan
from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from planner.spec.preset import Preset
from planner.spec.shipped import shipped

CREATED = "2026-01-01T00:00:00+00:00"


def _data(sweeps: list[dict[str, Any]], variants: list[dict[str, Any]] | None = None,
          lr: Any = 3e-4) -> dict[str, Any]:
    data = tomllib.loads(shipped("ablation-3d.toml").read_text())
    data["ablation"]["baseline"]["factors"]["lr"] = lr
    if variants is not None:
        data["ablation"]["variants"] = variants
    data["ablation"]["sweeps"] = sweeps
    return data


def _preset(sweeps: list[dict[str, Any]], **kw: Any) -> Preset:
    return parse_preset(_data(sweeps, **kw), "p.toml")


def _hand(name: str, **changes: Any) -> dict[str, Any]:
    return {"name": name, "changes": changes,
            "step_time_s": {"value": 3.0, "source": "entered"},
            "peak_memory_gib": {"value": 20.0, "source": "entered"}}


def test_levels_expand_into_one_variant_each_the_baselines_own_skipped() -> None:
    p = _preset([{"factor": "lr", "levels": [1e-4, 3e-4, 1e-3]}], variants=[])
    t = p.ablation
    assert t is not None
    assert [v.name for v in t.variants] == ["lr=0.0001", "lr=0.001"]
    assert [v.changes for v in t.variants] == [{"lr": 1e-4}, {"lr": 1e-3}]
    assert all(v.sweep == "lr" for v in t.variants)
    # Without figures of its own a level costs what the baseline does.
    assert t.variants[0].step_time_s == t.baseline.step_time_s
    plan = plan_campaign(p, load_catalog())
    assert [f.config for f in plan.assumptions.figures] == ["baseline", "lr=0.0001",
                                                            "lr=0.001"]
    assert {r.variant for r in plan.runs} | {n.id.split("-s")[0].rsplit("-", 1)[-1]
                                             for n in plan.not_fitting} >= {"lr=0.001"}
    note = next(d for d in plan.decisions if d.startswith("sweep over lr"))
    assert "level 0.0003 is the baseline's own" in note
    for run in plan.runs:
        if run.variant != "baseline":
            assert run.factor == "lr" and "lr=" + str(run.value) == run.variant


def test_names_and_figures_given_are_used() -> None:
    p = _preset([{"factor": "lr", "levels": [1e-4, 1e-3], "names": ["lr-low", "lr-high"],
                  "step_time_s": {"value": 9.0, "source": "entered"}}], variants=[])
    t = p.ablation
    assert t is not None
    assert [v.name for v in t.variants] == ["lr-low", "lr-high"]
    assert t.variants[1].step_time_s.value == 9.0
    assert t.variants[1].step_time_s.card == p.campaign.card  # anchored like any figure


def test_expansion_is_stable_when_the_preset_is_read_again() -> None:
    p = _preset([{"factor": "lr", "levels": [1e-4, 1e-3]}])
    again = Preset.model_validate(p.model_dump())
    assert again == p and fingerprint(again) == fingerprint(p)
    text = tomli_w.dumps(p.model_dump(mode="json", exclude_none=True))
    assert parse_preset(tomllib.loads(text), "saved.toml") == p


def test_a_preset_without_sweeps_keeps_its_fingerprint() -> None:
    data = tomllib.loads(shipped("ablation-7d.toml").read_text())
    dumped = parse_preset(data, "x").model_dump(mode="json")
    assert "sweeps" not in dumped["ablation"]
    assert all("sweep" not in v for v in dumped["ablation"]["variants"])


@pytest.mark.parametrize(("sweeps", "variants", "field", "words"), [
    ([{"factor": "lr", "levels": [1e-3]}], [_hand("lr=0.001", positional="alibi")],
     "ablation.sweeps[0].names", "has the name of variants 'lr=0.001'"),
    ([{"factor": "lr", "levels": [1e-3]}], [_hand("fast", lr=0.001)],
     "ablation.sweeps[0].levels[0]", "sets lr = 0.001, as variants 'fast' already does"),
    ([{"factor": "lr", "levels": [1e-3]}, {"factor": "lr", "levels": [1e-3, 1e-2],
                                            "names": ["a", "b"]}], [],
     "ablation.sweeps[1].levels[0]", "as sweeps[0] level 0.001 ('lr=0.001') already does"),
    ([{"factor": "lr", "levels": [1e-3, 1e-3]}], [], "ablation.sweeps[0].levels",
     "listed twice"),
    ([{"factor": "lr", "levels": [1e-3, 1e-2], "names": ["a"]}], [],
     "ablation.sweeps[0].names", "2 levels"),
    ([{"factor": "momentum", "levels": [0.9]}], [], "ablation.sweeps[0].factor",
     "not a baseline factor"),
    ([{"factor": "lr", "levels": []}], [], "ablation.sweeps[0].levels", "at least 1"),
    ([{"factor": "lr", "levels": ["a b"]}], [], "ablation.sweeps[0].levels[0]",
     "give `names`"),
    ([{"factor": "lr", "levels": [True, 1e-3], "names": ["on", "baseline"]}], [],
     "ablation.sweeps[0].names", "has the name of the baseline"),
])
def test_bad_sweeps_name_the_field_and_both_sides_of_a_collision(
        sweeps: list[dict[str, Any]], variants: list[dict[str, Any]], field: str,
        words: str) -> None:
    with pytest.raises(InputError) as info:
        _preset(sweeps, variants=variants)
    assert info.value.field == field and words in info.value.message, str(info.value)


def test_the_exported_plan_lists_the_variants_and_runs_as_written(tmp_path: Path) -> None:
    path = tmp_path / "sweep.toml"
    path.write_text(tomli_w.dumps(_data([{"factor": "lr", "levels": [1e-4, 3e-4, 1e-3]}])))
    out = tmp_path / "out"
    assert main(["--preset", str(path), "--out", str(out), "--created", CREATED,
                 "--solver", "fast"]) == 0
    plan = read_plan(out / "plan.toml")
    assert {"lr=0.0001", "lr=0.001"} <= {f.config for f in plan.assumptions.figures}
    assert any("-lr=0.0001-s" in r.id for r in plan.runs)
    assert main(["slurm", str(out / "plan.toml"), "--out", str(tmp_path / "slurm")]) == 0


def test_schema_describes_sweeps(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["schema"]) == 0
    out = capsys.readouterr().out
    assert "Factor sweeps" in out and "one variant each" in out


def test_adaptation_sweeps_and_controls_aimed_at_a_swept_variant() -> None:
    data = tomllib.loads(shipped("adaptation-30d.toml").read_text())
    data["adaptation"]["sweeps"] = [{"factor": "lora_rank", "levels": [4, 16, 32]}]
    data["adaptation"]["robustness"][0]["applies_to"] = ["lora_rank=4"]
    p = parse_preset(data, "a.toml")
    t = p.adaptation
    assert t is not None
    assert [v.name for v in t.variants][-2:] == ["lora_rank=4", "lora_rank=32"]
    plan = plan_campaign(p, load_catalog())
    controls = [r for r in plan.runs if r.kind == "robustness"]
    assert controls and {r.variant for r in controls} == {"lora_rank=4"}

"""A sweep level or a variant's change that spells the baseline's value in another type
(`"0.1"` beside 0.1) is the baseline's value, and a change that spells another variant's is
that variant again: an error naming both, one line, exit 2, nothing written."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from planner.spec.factors import alike, another_type
from tests.run_fixtures import harness as h

FIGURES = {"step_time_s": {"value": 1.0, "source": "entered"},
           "peak_memory_gib": {"value": 10.0, "source": "entered"}}


def _preset(variants: list[dict[str, Any]], sweeps: list[dict[str, Any]]) -> dict[str, Any]:
    d = copy.deepcopy(h.preset(seeds=(0,), robustness=[]))
    d["ablation"]["baseline"]["factors"].update(lr=0.1, warmup=True)
    d["ablation"]["variants"] = [{**v, **FIGURES} for v in variants]
    d["ablation"]["sweeps"] = sweeps
    return d


CASES = {
    "sweep level as text": ([], [{"factor": "lr", "levels": ["0.1", 0.3]}],
                            "ablation.sweeps[0].levels[0]", ["'0.1' (text)", "lr = 0.1"]),
    "sweep level in exponent": ([], [{"factor": "lr", "levels": [0.3, "1e-1"]}],
                                "ablation.sweeps[0].levels[1]", ["'1e-1'", "lr = 0.1"]),
    "sweep flag as text": ([], [{"factor": "warmup", "levels": ["true", False]}],
                           "ablation.sweeps[0].levels[0]", ["'true'", "warmup = True"]),
    "variant change as text": ([{"name": "a", "changes": {"lr": "0.1"}}], [],
                               "ablation.variants[0].changes", ["'0.1' (text)", "lr = 0.1"]),
    "level twice in two types": ([], [{"factor": "lr", "levels": ["0.3", 0.3]}],
                                 "ablation.sweeps[0].levels", ["'0.3'", "0.3 (a number)"]),
    "two variants in two types": ([{"name": "a", "changes": {"lr": 0.2}},
                                   {"name": "b", "changes": {"lr": "0.2"}}], [],
                                  "ablation.variants[1].changes", ["'b'", "'a'"]),
    "two variants alike": ([{"name": "a", "changes": {"lr": 0.2}},
                            {"name": "b", "changes": {"lr": 0.2}}], [],
                           "ablation.variants[1].changes", ["'b'", "'a'"]),
    "variant and level in two types": ([{"name": "a", "changes": {"lr": 0.3}}],
                                       [{"factor": "lr", "levels": ["0.3"]}],
                                       "ablation.sweeps[0].levels[0]", ["variants 'a'"]),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_baselines_value_in_another_type_is_an_error_naming_both(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str) -> None:
    variants, sweeps, field, words = CASES[case]
    preset = tmp_path / "preset.toml"
    preset.write_text(tomli_w.dumps(_preset(variants, sweeps)))
    rc = main(["--preset", str(preset), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{preset}: {field}:" in err, err
    for word in words:
        assert word in err, err
    assert not (tmp_path / "out").exists()


def test_values_of_one_type_and_distinct_levels_still_plan(tmp_path: Path) -> None:
    preset = tmp_path / "preset.toml"
    preset.write_text(tomli_w.dumps(_preset(
        [{"name": "a", "changes": {"lr": 0.2}}, {"name": "b", "changes": {"crash": "0.1"}}],
        [{"factor": "lr", "levels": [0.1, 0.3]}])))
    assert main(["--preset", str(preset), "--out", str(tmp_path / "out")]) == 0


@pytest.mark.parametrize(("a", "b", "same"), [
    ("0.1", 0.1, True), (0.1, "0.1", True), ("1e-4", 0.0001, True), (" 3 ", 3, True),
    ("true", True, True), ("False", False, True), ("0.1", "0.1", False), (0.1, 0.1, False),
    ("1", True, False), (1, True, False), ("x", 1, False), ("nan", 1.0, False),
    ("1e999", 1.0, False)])
def test_another_type(a: object, b: object, same: bool) -> None:
    assert another_type(a, b) is same
    assert alike(a, b) is (same or (a == b and type(a) is type(b)))

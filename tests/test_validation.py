"""Bad presets: each gives one clear message naming the file and the field."""

from __future__ import annotations

from typing import Any

import pytest

from planner.errors import InputError
from tests.conftest import plan_dict, shipped


def _set(data: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    node: Any = data
    keys = path.split(".")
    for key in keys[:-1]:
        node = node[int(key)] if key.isdigit() else node[key]
    last = keys[-1]
    if value is _DEL:
        del node[last]
    elif last.isdigit():
        node[int(last)] = value
    else:
        node[last] = value
    return data


_DEL = object()

CASES = [
    # (edit path, new value, field named, words in the message)
    ("campaign.card", "a9000", "campaign.card", "unknown card 'a9000'"),
    ("campaign.cards", -1, "campaign.cards", "must be at least 1"),
    ("campaign.cards", 0, "campaign.cards", "must be at least 1"),
    ("campaign.cards", "4", "campaign.cards", "must be a whole number (got '4')"),
    ("campaign.window_days", 5, "campaign.window_days", "3, 7 or 30"),
    ("campaign.window_hours", 100.0, "campaign.window_days", "exactly one"),
    ("campaign.colour", "red", "campaign.colour", "unknown key"),
    ("campaign.kind", "embedding", "campaign.kind", "no [embedding] section"),
    ("ablation.variants.0.changes", {"positional": "alibi", "norm": "layernorm"},
     "ablation.variants[0].changes", "changes 2 factors"),
    ("ablation.variants.0.changes", {"optimizer": "sgd"}, "ablation.variants[0].changes",
     "which the baseline lacks"),
    ("ablation.variants.0.changes", {"positional": "rope"}, "ablation.variants[0].changes",
     "the baseline's own value"),
    ("ablation.variants.0.changes", {}, "ablation.variants[0].changes", "changes no factor"),
    ("ablation.seeds", [0, 1, 1], "ablation.seeds", "listed twice"),
    ("ablation.steps", 0, "ablation.steps", "must be at least 1"),
    ("ablation.effective_batch", 128, "ablation.effective_batch", "16 × 4 × 1 = 64"),
    ("ablation.command", "python train.py {nope}", "ablation.command",
     "unknown placeholder {nope}"),
    ("ablation.command", "python train.py {factors[missing]}", "ablation.command",
     "has no value"),
    ("ablation.baseline.step_time_s.source", "measured",
     "ablation.baseline.step_time_s.device", "must name the device"),
    ("ablation.baseline.step_time_s.source", "guessed",
     "ablation.baseline.step_time_s.source", "'entered', 'measured', 'scaled' or 'analytic'"),
    ("ablation.baseline.peak_memory_gib.value", -3.0,
     "ablation.baseline.peak_memory_gib.value", "must be more than 0"),
    ("ablation.variants.1.name", "alibi", "ablation.variants", "used twice"),
    ("order.contact", {"name": "Ada", "email": "not-an-email"}, "order.contact.email",
     "not a valid email"),
    ("order.cuda", "10.2", "order.cuda", "needs CUDA >= 11.1"),
    ("overheads.stack_check_hours", 200.0, "overheads", "no usable time"),
    ("overheads.eval_minutes", -1.0, "overheads.eval_minutes", "must be at least 0"),
    ("campaign.name", "my campaign", "campaign.name", "only letters, digits"),
    ("order.cuda", "twelve", "order.cuda", "must be a version like 12.6"),
    ("order.pytorch", "2.x", "order.pytorch", "must be a version like 2.7 or 2.7.1"),
]


@pytest.mark.parametrize(("path", "value", "field", "words"), CASES,
                         ids=[f"{c[0]}={c[1]!r}"[:60] for c in CASES])
def test_bad_preset_names_file_and_field(path: str, value: Any, field: str, words: str) -> None:
    data = _set(shipped("ablation-7d"), path, value)
    with pytest.raises(InputError) as info:
        plan_dict(data)
    err = info.value
    assert err.file == "test.toml"
    assert err.field == field
    assert words in err.message
    line = str(err)
    assert "\n" not in line
    assert line.startswith(f"test.toml: {field}: ")


def test_more_cards_per_run_than_rented() -> None:
    data = shipped("ablation-7d")
    del data["ablation"]["effective_batch"]
    data["ablation"]["cards_per_run"] = 8
    with pytest.raises(InputError) as info:
        plan_dict(data)
    assert info.value.field == "ablation.cards_per_run"
    assert "only 4 rented" in info.value.message


def test_missing_section_is_named() -> None:
    data = _set(shipped("ablation-7d"), "campaign", _DEL)
    with pytest.raises(InputError) as info:
        plan_dict(data)
    assert info.value.field == "campaign"
    assert "required but missing" in info.value.message


def test_hopper_with_old_cuda_is_refused() -> None:
    data = shipped("ablation-7d")
    data["campaign"]["card"] = "h100-sxm"
    data["order"]["cuda"] = "11.7"
    with pytest.raises(InputError, match=r"needs CUDA >= 11\.8"):
        plan_dict(data)


def test_waived_two_factor_variant_becomes_a_plan_warning() -> None:
    data = shipped("ablation-7d")
    variant = data["ablation"]["variants"][0]
    variant["changes"] = {"positional": "alibi", "norm": "layernorm"}
    variant["waive_one_factor"] = "the alibi code path only exists with layernorm"
    plan = plan_dict(data)
    assert any("changes 2 factors" in w and "waived: the alibi code path" in w
               for w in plan.warnings)
    run = next(r for r in plan.runs if r.variant == "alibi")
    assert run.factor == "positional+norm"
    assert run.value == "alibi+layernorm"


def test_bool_is_not_the_same_value_as_an_int() -> None:
    data = shipped("ablation-7d")
    data["ablation"]["baseline"]["factors"]["layers"] = 1
    data["ablation"]["variants"][0]["changes"] = {"layers": True}
    plan = plan_dict(data)  # True differs from 1: a real change, no error
    assert any(r.factor == "layers" for r in plan.runs)


def test_int_and_float_of_equal_value_are_the_same_value() -> None:
    data = shipped("ablation-7d")
    data["ablation"]["baseline"]["factors"]["lr"] = 1
    data["ablation"]["variants"][0]["changes"] = {"lr": 1.0}
    with pytest.raises(InputError, match="the baseline's own value"):
        plan_dict(data)


@pytest.mark.parametrize("name", ["ablation-3d", "ablation-7d", "ablation-30d", "embedding-3d",
                                  "embedding-7d", "embedding-30d", "adaptation-30d"])
def test_every_shipped_preset_plans_and_is_labelled_entered(name: str) -> None:
    data = shipped(name)
    plan = plan_dict(data)
    assert plan.runs
    figures = [f.step_time_s for f in plan.assumptions.figures] + [
        f.peak_memory_gib for f in plan.assumptions.figures]
    if plan.assumptions.throughput_tokens_per_s is not None:
        figures.append(plan.assumptions.throughput_tokens_per_s)
    assert figures and all(f.source == "entered" for f in figures)


def test_every_pattern_of_the_schema_has_plain_words() -> None:
    from planner.errors import PATTERNS
    from planner.spec.catalog import Catalog
    from planner.spec.preset import Preset

    def patterns(node: Any) -> set[str]:
        if isinstance(node, dict):
            return set().union(*(({v} if k == "pattern" else patterns(v))
                                 for k, v in node.items()))
        if isinstance(node, list):
            return set().union(*(patterns(v) for v in node))
        return set()

    found = patterns(Preset.model_json_schema()) | patterns(Catalog.model_json_schema())
    assert found and found <= set(PATTERNS)

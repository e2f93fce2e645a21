"""The planner's fast `model_construct` builds the very instance pydantic's would, and the
cached template parse fills each command with its own values."""

from __future__ import annotations

import pytest
from pydantic import Field

from planner.campaign import new_run, plan_campaign
from planner.planfile.plan import Run
from planner.spec.base import Lax, constructor
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset
from planner.spec.templates import Args, TemplateError, fill

VALUES = dict(id="c-baseline-s0", kind="train", variant="baseline", factor="", value="",
              seed=0, card=[0, 1], start_h=1.0, end_h=2.5, steps=100, micro_batch=8,
              accumulation=4, effective_batch=64, checkpoint_dir="ckpt/c-baseline-s0",
              export_name="exp/c-baseline-s0", command="train", argv=["train"],
              resume="ckpt/latest",
              depends_on="", max_retries=2)


def test_a_run_is_the_instance_model_construct_makes() -> None:
    fast, slow = new_run(**VALUES), Run.model_construct(**VALUES)
    assert fast == slow
    assert list(vars(fast)) == list(vars(slow)) == list(Run.model_fields)
    assert fast.model_fields_set == slow.model_fields_set
    assert fast.version is None and fast.shard is None
    assert fast.model_dump(mode="json") == slow.model_dump(mode="json")
    # Frozen like any other: the plan's runs cannot be changed in place.
    with pytest.raises(ValueError, match="frozen"):
        fast.seed = 1


def test_every_run_of_a_plan_validates_back_to_itself() -> None:
    preset, source = load_preset("ablation-30d")
    plan = plan_campaign(preset, load_catalog(), source=source)
    for run in plan.runs:
        assert Run.model_validate(run.model_dump()) == run


class _Listy(Lax):
    tags: list[str] = []
    """A mutable default."""


class _Made(Lax):
    tags: list[str] = Field(default_factory=list)
    """A default factory."""


@pytest.mark.parametrize("model", [_Listy, _Made])
def test_models_it_cannot_build_faithfully_are_refused(model: type[Lax]) -> None:
    with pytest.raises(TypeError, match="model_construct"):
        constructor(model)


def test_a_template_parsed_once_fills_each_time_with_its_own_values() -> None:
    template = "python t.py --id {run_id} '{variant}' {overrides}"
    first = fill(template, {"run_id": "a;b", "variant": "it's", "overrides": Args(("x=1",))})
    again = fill(template, {"run_id": "c", "variant": "v", "overrides": Args(("y=$(z)",))})
    assert first[0] == ["python", "t.py", "--id", "a;b", "it's", "x=1"]
    assert again[0] == ["python", "t.py", "--id", "c", "v", "y=$(z)"]
    assert first[1] == "python t.py --id 'a;b' 'it'\"'\"'s' x=1"
    # The grammar is judged before any value: a bad placeholder before a missing value.
    with pytest.raises(TemplateError, match="no attributes"):
        fill("{missing} {x.y}", {})
    with pytest.raises(TemplateError, match="'missing' has no value"):
        fill("{missing} {x}", {})
    for _ in range(2):
        with pytest.raises(TemplateError, match="unbalanced ' quote"):
            fill("'{x}", {"x": 1})


def test_a_run_missing_a_required_field_or_given_an_unknown_one_is_refused() -> None:
    with pytest.raises(TypeError, match=r"missing \['command'\]"):
        new_run(**{k: v for k, v in VALUES.items() if k != "command"})
    with pytest.raises(TypeError, match=r"unknown \['colour'\]"):
        new_run(**VALUES, colour="red")


def test_a_preset_s_default_sections_are_the_validated_defaults() -> None:
    from planner.spec.preset import OrderSpec, Overheads, Preset

    assert Preset.model_fields["overheads"].default == Overheads()
    assert Preset.model_fields["order"].default == OrderSpec()

"""The runs a plan builds without validating them validate back to themselves, and the
cached template parse fills each command with its own values."""

from __future__ import annotations

import pytest

from planner.campaign import plan_campaign
from planner.planfile.plan import Run
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset
from planner.spec.templates import Args, TemplateError, fill


def test_every_run_of_a_plan_validates_back_to_itself() -> None:
    preset, source = load_preset("ablation-30d")
    plan = plan_campaign(preset, load_catalog(), source=source)
    for run in plan.runs:
        assert Run.model_validate(run.model_dump()) == run


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


def test_a_preset_s_default_sections_are_the_validated_defaults() -> None:
    from planner.spec.preset import OrderSpec, Overheads, Preset

    assert Preset.model_fields["overheads"].default == Overheads()
    assert Preset.model_fields["order"].default == OrderSpec()

"""The UI's edits, without the UI: frozen presets replaced and validated, plans kept."""

from __future__ import annotations

import pytest

from planner.errors import InputError
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset
from planner.spec.preset import Variant
from screens import state
from tests.test_tui import FROZEN

CATALOG = load_catalog()


def preset(name: str = "ablation-7d"):  # type: ignore[no-untyped-def]
    return load_preset(str(FROZEN / f"{name}.toml"))[0]


def test_edit_replaces_and_validates_without_touching_the_original() -> None:
    p = preset()
    q = state.edit(p, "campaign", cards=8)
    assert (p.campaign.cards, q.campaign.cards) == (4, 8)
    with pytest.raises(InputError) as err:
        state.edit(p, "campaign", cards=0)
    assert err.value.field == "campaign.cards"
    with pytest.raises(InputError, match="listed twice"):
        state.edit(p, "training", seeds=[1, 1])
    assert state.edit(p, "training.baseline", factors={"x": 1}).ablation.baseline.factors == {
        "x": 1}


def test_window_days_or_custom_hours() -> None:
    p = state.set_window(preset(), None, 100.0)
    assert (p.campaign.window_days, p.campaign.hours) == (None, 100.0)
    p = state.set_window(p, 30)
    assert (p.campaign.window_days, p.campaign.window_hours) == (30, None)


def test_switching_kind_keeps_the_rental() -> None:
    p = state.edit(preset(), "campaign", cards=2, card="l40s")
    e = state.switch_kind(p, "embedding")
    assert (e.campaign.kind, e.campaign.cards, e.campaign.card) == ("embedding", 2, "l40s")
    assert e.embedding is not None and e.ablation is None
    a = state.switch_kind(e, "adaptation")
    assert a.adaptation is not None and a.embedding is None
    assert state.switch_kind(a, "adaptation") is a


def test_variants_added_replaced_removed() -> None:
    p = preset("adaptation-30d")
    fig = {"value": 6.0, "source": "entered"}
    v = Variant.model_validate({"name": "rank8", "changes": {"lora_rank": 8},
                                "step_time_s": fig, "peak_memory_gib": fig})
    added = state.put_variant(p, v)
    assert [x.name for x in added.adaptation.variants][-1] == "rank8"
    rank4 = v.model_copy(update={"name": "rank4", "changes": {"lora_rank": 4}})
    replaced = state.put_variant(added, rank4, 0)
    assert replaced.adaptation.variants[0].name == "rank4"
    gone = state.drop_variant(p, 0)
    assert "rank64" not in [x.name for x in gone.adaptation.variants]


def test_a_refused_plan_keeps_the_last_good_one_and_undo_history() -> None:
    ws = state.start(preset(), CATALOG)
    good = ws.plan
    fig = {"value": 3.0, "source": "entered"}
    two = Variant.model_validate({"name": "two", "changes": {"norm": "x", "positional": "y"},
                                  "step_time_s": fig, "peak_memory_gib": fig})
    bad = state.apply(ws, state.put_variant(ws.preset, two), CATALOG)
    assert bad.plan is good and bad.error is not None and not bad.current
    assert "changes 2 factors" in bad.error.message
    assert bad.history[-1] == ws.preset and bad.revision == ws.revision + 1
    waived = state.put_variant(ws.preset, two.model_copy(update={"waive_one_factor": "test"}))
    ok = state.apply(bad, waived, CATALOG)
    assert ok.current and any("waived: test" in w for w in ok.plan.warnings)


@pytest.mark.parametrize(("text", "value"), [
    ("true", True), ("False", False), ("3", 3), ("2e-4", 2e-4), ('"3"', "3"), ("rope", "rope"),
])
def test_factor_values_read_as_typed(text: str, value: object) -> None:
    parsed = state.parse_value(text)
    assert parsed == value and type(parsed) is type(value)


def test_text_fields() -> None:
    assert state.parse_factors("a=1, b = x\nc=true") == {"a": 1, "b": "x", "c": True}
    for bad in ("a", "=1", "a=1, a=2", "a="):
        with pytest.raises(ValueError):
            state.parse_factors(bad)
    assert state.parse_ints("0, 1 2") == [0, 1, 2]
    assert state.parse_int("30_000") == 30000
    with pytest.raises(ValueError, match="not a whole number"):
        state.parse_int("four")
    assert state.parse_optional_float(" ") is None
    assert state.show_factors({"a": True, "b": 2.5}) == "a=true, b=2.5"


def test_contact_is_both_or_neither() -> None:
    assert state.contact_of(" ", "") is None
    assert state.contact_of("Ada", "ada@example.org").email == "ada@example.org"
    with pytest.raises(InputError, match="both"):
        state.contact_of("Ada", "")
    with pytest.raises(InputError) as err:
        state.contact_of("Ada", "ada@")
    assert err.value.field == "contact.email"


def test_cost_shown_when_priced() -> None:
    from screens.text import cost

    ws = state.start(preset(), CATALOG)
    assert cost(ws.plan) == "cost unknown (no price)"
    priced = state.apply(ws, state.edit(ws.preset, "campaign", price_per_card_hour=1.25),
                         CATALOG)
    assert cost(priced.plan) == ("cost 840.00 USD (1.25 USD per card-hour), 46.67 USD per "
                                 "completed run")

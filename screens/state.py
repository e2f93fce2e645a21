"""The UI's state and its edits: pure functions, no Textual, so they test and time alone.

The current campaign is one frozen `Preset`. An edit builds a new one with `model_copy`
and validates it as a whole (model_copy alone skips validation), then `apply` plans it.
A preset that fails validation never becomes current; one that validates but cannot be
planned (a two-factor variant, an unknown card) does become current, so the user can see
and fix it, while the last good plan stays on screen.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import tomli_w
from pydantic import BaseModel, ValidationError

from planner.campaign import plan_campaign
from planner.errors import InputError, from_validation
from planner.figures.estimates import on_card
from planner.packing.capacity import more_seeds
from planner.planfile.order import Order, make_contact, make_order
from planner.planfile.plan import Plan, with_overrides
from planner.spec.catalog import Catalog
from planner.spec.loading import load_preset
from planner.spec.overrides import Overrides, holding
from planner.spec.preset import Contact, FactorValue, Preset, Variant

EXAMPLE_OF_KIND = {"ablation": "ablation-7d", "embedding": "embedding-7d",
                   "adaptation": "adaptation-30d"}
"""The shipped preset whose workload seeds a campaign switched to another kind."""


@dataclass(frozen=True)
class Workspace:
    """Everything the screens show: the current preset, the last good plan, the error."""

    preset: Preset
    """The campaign being edited."""
    plan: Plan
    """The plan of the last preset that could be planned."""
    error: InputError | None = None
    """Why the current edit cannot be planned; None when `plan` matches `preset`."""
    source: str | None = None
    """The preset's file, for messages."""
    measurements: Any = None
    """Measurements flowing into the plan (from the Measure screen), or None."""
    revision: int = 0
    """Bumped on every change, so screens redraw only when something changed."""
    history: tuple[Preset, ...] = field(default=(), repr=False)
    """Earlier presets, newest last, for undo."""
    what_if: tuple[Overrides, list[str]] | None = None
    """The command line's overrides of the opened preset and their words: every plan names
    those the preset still has."""

    @property
    def current(self) -> bool:
        """Whether the plan on screen is the plan of the current preset."""
        return self.error is None


def plan_of(preset: Preset, catalog: Catalog, *, created: datetime | None,
            source: str | None, measurements: Any = None,
            what_if: tuple[Overrides, list[str]] | None = None) -> Plan:
    """`plan_campaign` with the workspace's measurements, if any, naming the command line's
    overrides the preset still has."""
    plan = plan_campaign(preset, catalog, created=created, source=source,
                         measurements=measurements)
    if what_if is None:
        return plan
    return with_overrides(plan, holding(what_if[0], preset, what_if[1]))


def start(preset: Preset, catalog: Catalog, *, created: datetime | None = None,
          source: str | None = None,
          what_if: tuple[Overrides, list[str]] | None = None) -> Workspace:
    """The first workspace; raises InputError when the preset cannot be planned at all."""
    return Workspace(preset=preset, plan=plan_of(preset, catalog, created=created,
                                                  source=source, what_if=what_if),
                     source=source, what_if=what_if)


def apply(ws: Workspace, preset: Preset, catalog: Catalog, *,
          created: datetime | None = None, measurements: Any = ...,
          remember: bool = True) -> Workspace:
    """Make `preset` current and plan it; on InputError keep the last good plan."""
    meas = ws.measurements if measurements is ... else measurements
    history = (*ws.history[-49:], ws.preset) if remember and preset != ws.preset else ws.history
    try:
        plan = plan_of(preset, catalog, created=created, source=ws.source, measurements=meas,
                       what_if=ws.what_if)
    except InputError as exc:
        return replace(ws, preset=preset, error=exc, measurements=meas,
                       revision=ws.revision + 1, history=history)
    return replace(ws, preset=preset, plan=plan, error=None, measurements=meas,
                   revision=ws.revision + 1, history=history)


def fail(ws: Workspace, error: InputError) -> Workspace:
    """The workspace with an edit refused: preset and plan unchanged, the error shown."""
    return replace(ws, error=error, revision=ws.revision + 1)


def validated(preset: Preset) -> Preset:
    """Validate a preset built with `model_copy`; errors become one InputError."""
    try:
        return Preset.model_validate(preset.model_dump())
    except ValidationError as exc:
        raise from_validation(exc, None) from None


def _set(model: BaseModel, parts: list[str], updates: dict[str, Any]) -> BaseModel:
    if not parts:
        return model.model_copy(update=updates)
    head, *rest = parts
    child = getattr(model, head)
    if child is None:
        raise InputError("this campaign has no such section", field=head)
    return model.model_copy(update={head: _set(child, rest, updates)})


def edit(preset: Preset, section: str, **updates: Any) -> Preset:
    """`preset` with fields of the dotted `section` (e.g. "campaign", "ablation.baseline",
    or "" for the top level) replaced, validated."""
    parts = [p for p in section.split(".") if p]
    if parts and parts[0] == "training":
        parts[0] = preset.campaign.kind
    return validated(_set(preset, parts, updates))  # type: ignore[arg-type]


def set_card(preset: Preset, key: str) -> Preset:
    """The campaign on card model `key`: only the card changes (figures and a price keep
    the card they were taken on; planning derives them). Screen 1 and Compare both use it."""
    return validated(on_card(preset, key))


def set_price(preset: Preset, price: float | None) -> Preset:
    """A price typed for the campaign's current card."""
    return edit(preset, "campaign", price_per_card_hour=price,
                price_card=preset.campaign.card if price is not None else "")


def set_window(preset: Preset, days: int | None = None, hours: float | None = None) -> Preset:
    """A standard window in days, or a custom one in hours."""
    return edit(preset, "campaign", window_days=days, window_hours=None if days else hours)


def fill_to_capacity(preset: Preset, plan: Plan) -> Preset:
    """`preset` with its seeds (training; ids continuing its list) or its representation
    versions (embedding) set to what the window holds, from `plan`, the preset's own plan."""
    cap = plan.summary.capacity
    if preset.embedding is not None:
        if cap is None or not cap.versions:
            raise InputError("no whole representation version fits the window",
                             field="embedding.versions")
        return edit(preset, "embedding", versions=cap.versions)
    training = preset.training
    if training is None or cap is None or not cap.seed_sets:
        raise InputError("no complete seed set fits the window", field="training.seeds")
    return edit(preset, "training", seeds=more_seeds(training.seeds, cap.seed_sets))


def switch_kind(preset: Preset, kind: str) -> Preset:
    """The campaign turned into another kind: the rental kept, the workload taken from
    the shipped example of that kind."""
    if kind == preset.campaign.kind:
        return preset
    if kind not in EXAMPLE_OF_KIND:
        raise InputError(f"unknown kind {kind!r}", field="campaign.kind")
    sample = load_preset(EXAMPLE_OF_KIND[kind])[0]
    data = preset.model_dump()
    data["campaign"]["kind"] = kind
    for section in EXAMPLE_OF_KIND:
        data[section] = None
    data[kind] = getattr(sample, kind).model_dump()
    try:
        return Preset.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, None) from None


def put_variant(preset: Preset, variant: Variant, index: int | None = None) -> Preset:
    """The preset with `variant` replacing variant `index`, or appended when None."""
    training = preset.training
    if training is None:
        raise InputError("only training campaigns have variants", field="campaign.kind")
    variants = list(training.variants)
    if index is None:
        variants.append(variant)
    else:
        variants[index] = variant
    return edit(preset, "training", variants=variants)


def drop_variant(preset: Preset, index: int) -> Preset:
    """The preset without variant `index`; robustness controls aimed at it lose it too."""
    training = preset.training
    if training is None:
        return preset
    gone = training.variants[index].name
    variants = [v for i, v in enumerate(training.variants) if i != index]
    robustness = [r.model_copy(update={"applies_to": [t for t in r.applies_to if t != gone]})
                  for r in training.robustness]
    return edit(preset, "training", variants=variants, robustness=robustness)


# Text the user types, turned into values (ValueError carries the message shown).

def parse_int(text: str) -> int:
    """A whole number."""
    try:
        return int(text.strip().replace("_", "").replace(",", ""))
    except ValueError:
        raise ValueError(f"not a whole number: {text.strip()!r}") from None


def parse_float(text: str) -> float:
    """A number."""
    try:
        return float(text.strip().replace("_", "").replace(",", ""))
    except ValueError:
        raise ValueError(f"not a number: {text.strip()!r}") from None


def parse_optional_float(text: str) -> float | None:
    """A number, or nothing when left empty."""
    return None if not text.strip() else parse_float(text)


def parse_optional_int(text: str) -> int | None:
    """A whole number, or nothing when left empty."""
    return None if not text.strip() else parse_int(text)


def parse_ints(text: str) -> list[int]:
    """Whole numbers separated by commas or spaces, e.g. seeds `0, 1, 2`."""
    items = [t for t in text.replace(",", " ").split() if t]
    return [parse_int(t) for t in items]


def parse_words(text: str) -> list[str]:
    """Names separated by commas or spaces, e.g. packages."""
    return [t for t in text.replace(",", " ").split() if t]


def parse_text(text: str) -> str:
    """Text, trimmed."""
    return text.strip()


def parse_value(text: str) -> FactorValue:
    """A factor value: true/false, a number, or text (quotes optional)."""
    t = text.strip()
    if t.lower() in ("true", "false"):
        return t.lower() == "true"
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "\"'":
        return t[1:-1]
    for kind in (int, float):
        try:
            return kind(t)
        except ValueError:
            pass
    if not t:
        raise ValueError("a factor needs a value")
    return t


def parse_factors(text: str) -> dict[str, FactorValue]:
    """`name = value` pairs separated by commas or new lines."""
    out: dict[str, FactorValue] = {}
    for item in text.replace("\n", ",").split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"write factor = value, not {item.strip()!r}")
        name, value = (s.strip() for s in item.split("=", 1))
        if not name:
            raise ValueError(f"a factor needs a name: {item.strip()!r}")
        if name in out:
            raise ValueError(f"factor {name!r} is given twice")
        out[name] = parse_value(value)
    return out


def show_value(v: FactorValue) -> str:
    """A factor value as the user would type it."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def show_factors(factors: dict[str, FactorValue], sep: str = ", ") -> str:
    """`name = value` pairs, as `parse_factors` reads them."""
    return sep.join(f"{k}={show_value(v)}" for k, v in factors.items())


def show_number(x: float | int | None) -> str:
    """A number as the user would type it (empty for None)."""
    if x is None:
        return ""
    return f"{x:g}" if isinstance(x, float) else str(x)


def exports(ws: Workspace, catalog: Catalog, contact: Contact | None) -> tuple[Plan, Order]:
    """The plan and order to write, exactly as the headless `--out` writes them: the
    order's warnings join the plan's."""
    card = catalog.get(ws.preset.campaign.card)
    order, warnings = make_order(ws.preset, ws.plan, card, contact)
    plan = ws.plan
    if warnings:
        plan = plan.model_copy(update={"warnings": [*plan.warnings, *warnings]})
    return plan, order


def preset_toml(preset: Preset) -> str:
    """The preset as a TOML file that loads back to the same preset (and the same plan)."""
    header = ("# campaign-planner preset, saved from the interactive planner.\n"
              "# Plan it again: campaign-planner --preset THIS_FILE\n\n")
    return header + tomli_w.dumps(preset.model_dump(mode="json", exclude_none=True))


def contact_of(name: str, email: str) -> Contact | None:
    """The order's contact from the form; None when both are empty (a draft order)."""
    return make_contact(name, email, name_field="contact.name", email_field="contact.email",
                        both="give both a contact name and an email, or neither for a draft")

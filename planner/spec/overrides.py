"""What-if overrides: the card, the card count, the window or the seeds of a preset,
changed for one plan without editing the file.

An override is applied to the preset as an edit of its fields and validated like the file
itself, so every bound of the schema holds and the result is the preset that editing those
fields would give: the same fingerprint, hence the same campaign id and run ids. Each
override is named in words for the plan's assumptions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from pydantic import ValidationError

from planner.errors import InputError, from_validation

if TYPE_CHECKING:
    from planner.spec.catalog import Catalog
    from planner.spec.preset import Campaign, Preset

STANDARD_DAYS = (3, 7, 30)
"""Windows a preset gives as `window_days`; any other number of days is `window_hours`."""
SHOWN_SEEDS = 8
"""Seeds listed one by one in an override's words before the rest are counted."""
WHERE = "command line"
"""Where an override came from, as its words in the plan say."""


class Overrides(NamedTuple):
    """Values that replace the preset's for one plan; None leaves the preset's."""

    card: str | None = None
    """Card model (catalog key): `--card`."""
    cards: int | None = None
    """Cards rented: `--cards`."""
    days: float | None = None
    """Window in days: `--days` (3, 7 or 30 become `window_days`, others `window_hours`)."""
    hours: float | None = None
    """Window in hours: `--hours`."""
    seeds: tuple[int, ...] | None = None
    """Seeds of a training campaign: `--seeds`."""

    def given(self) -> bool:
        """Whether any value is overridden."""
        return any(v is not None for v in self)


def _flag_of(field: str, o: Overrides) -> str | None:
    """The flag behind a validation error about `field` (dotted), when an override caused
    it."""
    parts = field.split(".")
    if parts[:2] == ["campaign", "cards"] and o.cards is not None:
        return "--cards"
    if parts[:2] == ["campaign", "card"] and o.card is not None:
        return "--card"
    if parts[:2] in (["campaign", "window_hours"], ["campaign", "window_days"]):
        return "--hours" if o.hours is not None else "--days"
    if len(parts) >= 2 and parts[1].startswith("seeds") and o.seeds is not None:
        return "--seeds"
    return None


def _check_window(o: Overrides) -> None:
    from planner.spec.bounds import HOURS

    for flag, value, most in (("--days", o.days, HOURS / 24), ("--hours", o.hours, HOURS)):
        if value is not None and not 0 < value <= most:
            raise InputError(f"must be more than 0 and at most {most:g} (got {value:g})",
                             field=flag)


def apply_overrides(preset: Preset, o: Overrides, catalog: Catalog | None = None,
                    source: str | None = None) -> tuple[Preset, list[str]]:
    """`preset` with the overrides applied and validated, and each override in words
    (`cards 4 → 8 (command line)`). A bad value raises InputError naming its flag; a value
    the preset's own checks refuse (versions × cards too many) names the preset's field."""
    if not o.given():
        return preset, []
    from planner.spec.preset import Preset

    if o.days is not None and o.hours is not None:
        raise InputError("give --days or --hours, not both", field="--days")
    _check_window(o)
    if o.card is not None and catalog is not None:
        catalog.get(o.card, field="--card")
    if o.seeds is not None and preset.training is None:
        raise InputError(f"a {preset.campaign.kind} campaign has no seeds", field="--seeds")
    if o.seeds is not None and not o.seeds:
        raise InputError("no seed given", field="--seeds")
    data = preset.model_dump()
    campaign = data["campaign"]
    if o.card is not None:
        campaign["card"] = o.card
    if o.cards is not None:
        campaign["cards"] = o.cards
    if o.days is not None or o.hours is not None:
        hours = o.hours if o.hours is not None else o.days * 24.0  # type: ignore[operator]
        if o.days is not None and o.days in STANDARD_DAYS:
            campaign["window_days"], campaign["window_hours"] = int(o.days), None
        else:
            campaign["window_days"], campaign["window_hours"] = None, hours
    if o.seeds is not None:
        data[preset.campaign.kind]["seeds"] = list(o.seeds)
    try:
        moved = Preset.model_validate(data)
    except ValidationError as exc:
        err = from_validation(exc, source)
        flag = _flag_of(err.field, o)
        if flag is None:
            raise err from None
        raise InputError(err.message, field=flag) from None
    return moved, _words(preset, moved, o)


def _window(c: Campaign) -> str:
    if c.window_days is not None:
        return f"{c.window_days} days"
    if c.hours % 24 == 0:
        return f"{c.hours / 24:g} days ({c.hours:g} h)"
    return f"{c.hours:g} h"


def seeds_words(seeds: list[int] | tuple[int, ...]) -> str:
    """Seeds as a short text: `0–9 (10 seeds)`, or `0, 1, 5`."""
    if len(seeds) > 2 and list(seeds) == list(range(seeds[0], seeds[0] + len(seeds))):
        return f"{seeds[0]}–{seeds[-1]} ({len(seeds)} seeds)"
    shown = ", ".join(map(str, seeds[:SHOWN_SEEDS]))
    more = len(seeds) - SHOWN_SEEDS
    return shown + (f", … ({len(seeds)} seeds)" if more > 0 else "")


def _words(before: Preset, after: Preset, o: Overrides) -> list[str]:
    a, b = before.campaign, after.campaign
    pairs: list[tuple[str, str, str]] = []
    if o.card is not None:
        pairs.append(("card", a.card, b.card))
    if o.cards is not None:
        pairs.append(("cards", str(a.cards), str(b.cards)))
    if o.days is not None or o.hours is not None:
        pairs.append(("window", _window(a), _window(b)))
    if o.seeds is not None and before.training is not None and after.training is not None:
        pairs.append(("seeds", seeds_words(before.training.seeds),
                      seeds_words(after.training.seeds)))
    return [f"{what} {old} → {new} ({WHERE})" if old != new
            else f"{what} {new} ({WHERE}; the preset's own)" for what, old, new in pairs]


def holding(o: Overrides, preset: Preset, lines: list[str]) -> list[str]:
    """The words of `lines` (from `apply_overrides`) whose override `preset` still has: an
    editor started from the command line names an override only until it is edited."""
    c = preset.campaign
    hours = o.hours if o.hours is not None else (o.days * 24.0 if o.days is not None else None)
    seeds = list(o.seeds) if o.seeds is not None else None
    holds = {
        "card": o.card == c.card,
        "cards": o.cards == c.cards,
        "window": hours is not None and abs(c.hours - hours) < 1e-9,
        "seeds": preset.training is not None and seeds == list(preset.training.seeds),
    }
    return [line for line in lines if holds.get(line.split(" ", 1)[0], False)]

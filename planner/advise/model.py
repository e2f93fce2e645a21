"""What `advise` returns: the space searched, one option per planned order, the frontier;
and the parsing of the space as a user types it (`--counts 1-8`, `--windows 3,7,30`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from planner.errors import InputError
from planner.spec.base import Lax

MAX_CARDS = 4096
"""The most cards a preset may rent."""


@dataclass(frozen=True)
class Space:
    """The orders to consider."""

    cards: tuple[str, ...] | None
    """Card models (catalog keys); None: every catalog card with the memory for the campaign."""
    counts: tuple[int, ...] = tuple(range(1, 9))
    """Card counts."""
    windows: tuple[int, ...] = (3, 7, 30)
    """Rental windows in days."""


class Option(Lax):
    """One order, planned."""

    card: str
    """Card model (catalog key)."""
    card_name: str
    """Card model in full."""
    cards: int
    """Cards rented."""
    window_days: int
    """Rental window in days."""
    card_hours: float
    """Card-hours bought: cards × window."""
    price_per_card_hour: float | None
    """Price of one card-hour, when the preset or the user's catalog gives one."""
    cost_total: float | None
    """Price × card-hours bought, when a price is known."""
    currency: str
    """Currency of the price."""
    meets_goal: bool
    """Whether the order achieves the goal."""
    runs_fit: int
    """Matrix runs (training) or representation versions (embedding) that fit."""
    runs_total: int
    """Matrix runs or versions wanted."""
    evaluations_fit: int
    """Robustness evaluations that fit (0 for embedding)."""
    evaluations_total: int
    """Robustness evaluations wanted."""
    complete_seeds: int | None
    """Seeds whose whole matrix completes (None for embedding)."""
    seeds_total: int | None
    """Seeds in the campaign (None for embedding)."""
    seed_sets: int | None = None
    """Complete seed sets the order holds, beyond the campaign's seeds too (its capacity,
    `planner.packing.capacity`; None for embedding)."""
    first_complete_seed_end_h: float | None
    """Hour the first complete seed set ends (None when no seed set completes)."""
    makespan_h: float
    """Hour the last scheduled run ends."""
    idle_card_hours: float
    """Usable card-hours with nothing on them."""
    hours_left_h: float
    """Hours between the last run's end and the close of the usable window."""
    min_headroom_gib: float | None
    """Smallest memory headroom over the configurations that fit (None for embedding)."""
    provenance: list[str]
    """Kinds of figure the fit rests on: entered, measured, scaled, analytic."""
    figures: list[str]
    """Those figures' provenance in words, e.g. `scaled from NVIDIA RTX A6000`."""
    needs: list[str] = []
    """What the order lacks to meet the goal (empty when it meets it)."""
    sky: str = ""
    """The order in SkyPilot's terms (`resources.accelerators`, e.g. `A6000:4`); empty when
    SkyPilot names no such card."""
    dstack: str = ""
    """The order in dstack's terms (`resources.gpu`, e.g. `A6000:48GB:4`); empty when dstack
    names no such card."""


class FrontierCell(Lax):
    """For one window and card model: the smallest count that meets the goal, or the best
    reachable and what it lacks."""

    card: str
    """Card model."""
    window_days: int
    """Rental window in days."""
    cards: int | None
    """Smallest count in the space that meets the goal; None when none does."""
    option: Option | None
    """That order, or the best reachable one when none meets the goal."""


class Skipped(Lax):
    """Orders that could not be planned, with the planner's reason."""

    card: str
    """Card model."""
    cards: int
    """Card count."""
    window_days: int
    """Rental window in days."""
    reason: str
    """Why the planner refused it."""


class Advice(Lax):
    """The result of a search."""

    campaign: str
    """The campaign's name."""
    goal: str
    """The goal, as typed."""
    cards: list[str]
    """Card models searched."""
    left_out: list[str] = []
    """Catalog cards not searched by default, and why (memory)."""
    counts: list[int]
    """Card counts searched."""
    windows: list[int]
    """Windows searched, in days."""
    planned: int
    """Orders planned."""
    ranked_by: Literal["cost", "card-hours", "cost, then card-hours"]
    """How `options` are ranked."""
    ranking_note: str
    """Why, in words."""
    budget: float | None = None
    """Budget the options must stay within, when given."""
    over_budget: int = 0
    """Orders that meet the goal but cost more than the budget or have no price."""
    options: list[Option]
    """Orders that meet the goal (and the budget), best first."""
    frontier: list[FrontierCell]
    """Per window and card model: the smallest count that meets the goal."""
    best_reachable: Option | None = None
    """When no order meets the goal: the one that comes closest."""
    skipped: list[Skipped] = []
    """Orders the planner refused."""
    current: tuple[str, int, int] | None = None
    """The preset's own order (card, cards, window days) when it is a standard window."""


def parse_cards(text: str, field: str = "--cards") -> tuple[str, ...]:
    """Catalog keys separated by commas or spaces, each once."""
    keys = tuple(dict.fromkeys(k for k in text.replace(",", " ").split() if k))
    if not keys:
        raise InputError("no card given", field=field)
    return keys


def parse_counts(text: str, field: str = "--counts") -> tuple[int, ...]:
    """Card counts: `1-8`, `1,2,4,8` or both, e.g. `1-4,8`; sorted, each once."""
    out: set[int] = set()
    for item in (t.strip() for t in text.replace(" ", ",").split(",")):
        if not item:
            continue
        low, dash, high = item.partition("-")
        try:
            a = int(low)
            b = int(high) if dash else a
        except ValueError:
            raise InputError(f"not a count or a range of counts: {item!r} (write 1-8 or "
                             "1,2,4)", field=field) from None
        if not 1 <= a <= b <= MAX_CARDS:
            raise InputError(f"{item!r}: counts run from 1 to {MAX_CARDS}, low to high",
                             field=field)
        out.update(range(a, b + 1))
    if not out:
        raise InputError("no count given", field=field)
    return tuple(sorted(out))


def parse_windows(text: str, field: str = "--windows") -> tuple[int, ...]:
    """Rental windows in days: 3, 7 or 30, or whole days beyond 30 (ordered as such)."""
    out: set[int] = set()
    for item in (t.strip() for t in text.replace(" ", ",").split(",")):
        if not item:
            continue
        try:
            days = int(item.removesuffix("d"))
        except ValueError:
            raise InputError(f"not a number of days: {item!r}", field=field) from None
        if days not in (3, 7, 30) and days <= 30:
            raise InputError(f"{days} days cannot be ordered: rentals are 3, 7 or 30 days, "
                             "or whole days beyond 30", field=field)
        out.add(days)
    if not out:
        raise InputError("no window given", field=field)
    return tuple(sorted(out))

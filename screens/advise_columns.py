"""The Advise table's columns: those of `campaign-planner advise`, dropped from the least
needed while the table is wider than the screen; what a dropped column said stays in the
detail line under the table."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from planner.advise.model import Option
from planner.advise.render import cost, first_set, headroom, seeds, sets
from screens.widgets.tables import width_of


@dataclass(frozen=True)
class Column:
    """One column: its header, its cell, and how readily it goes when space is short."""

    header: str
    cell: Callable[[Option], str]
    drop: int
    """0: always shown; higher numbers go first."""
    right: bool = True
    """Numbers align right."""


COLUMNS: tuple[Column, ...] = (
    Column("card", lambda o: o.card, 0, right=False),
    Column("cards", lambda o: str(o.cards), 0),
    Column("days", lambda o: str(o.window_days), 0),
    Column("card-h", lambda o: f"{o.card_hours:g}", 0),
    Column("cost", cost, 0),
    Column("runs", lambda o: f"{o.runs_fit}/{o.runs_total}", 0),
    Column("seeds", seeds, 1),
    Column("sets", sets, 1),
    Column("1st set", first_set, 2),
    Column("idle", lambda o: f"{o.idle_card_hours:.1f}", 3),
    Column("left", lambda o: f"{o.hours_left_h:.1f}", 4),
    Column("headroom", headroom, 5),
    Column("figures", lambda o: ", ".join(o.provenance), 6, right=False),
)
"""The headless table's columns, in its order (after the rank)."""

LEGEND = {
    "card-h": "card-h card-hours bought", "sets": "sets seed sets the order holds",
    "1st set": "1st set hour the first complete seed "
    "set ends", "idle": "idle idle card-hours", "left": "left hours before the usable window "
    "closes", "headroom": "headroom smallest memory headroom",
}
"""What an abbreviated header means, for the line under the table."""

PADDING = 1
"""Cells of space each side of a cell (DataTable's cell padding)."""


def chosen(options: Sequence[Option], width: int) -> list[Column]:
    """The columns to show in `width` cells: all when they fit, else the least needed
    dropped first (the rank column and the current-order mark always stay)."""
    columns = list(COLUMNS)
    fixed = 2 + len(str(len(options))) + 4 * PADDING  # mark and rank columns

    def need(cols: list[Column]) -> int:
        return fixed + sum(max([width_of(c.header), *(width_of(c.cell(o)) for o in options)])
                           + 2 * PADDING for c in cols)

    while need(columns) > width and max(c.drop for c in columns) > 0:
        worst = max(c.drop for c in columns)
        columns = [c for c in columns if c.drop != worst]
    return columns


def legend(columns: Sequence[Column]) -> str:
    """The marks and abbreviated headers shown, in words."""
    shown = {c.header for c in columns}
    return " · ".join(["● the order planned now",
                       *(text for key, text in LEGEND.items() if key in shown)])

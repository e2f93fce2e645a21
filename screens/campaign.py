"""Campaign screen: the window, the cards rented, the card model, the kind."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal
from textual.widgets import DataTable, Label, RadioButton, RadioSet

from planner.spec.preset import Campaign, Overheads
from screens import state
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import ChoiceRow, FieldRow, help_of

WINDOWS = (3, 7, 30)
WIDE_CARDS = 96
"""Screens at least this wide show each card's architecture too."""


class CardTable(DataTable[str]):
    """The catalog, one card per row; Enter or a click chooses the card."""

    def on_click(self, event: events.Click) -> None:
        # One click chooses, as people expect of a list of options: the table's own
        # handling of the click (it runs after this one) moves the cursor, and a click on
        # the row the cursor is already on chooses it by itself.
        self.call_next(self._choose_if_moved, self.cursor_row)

    def _choose_if_moved(self, before: int) -> None:
        if self.cursor_row != before:
            self.action_select_cursor()


def _rows() -> list[FieldRow]:
    c, o = Campaign, Overheads
    return [
        FieldRow("Cards", "campaign.cards", state.parse_int, tooltip=help_of(c, "cards")),
        ChoiceRow("Kind", "campaign.kind", ("ablation", "embedding", "adaptation"), "ablation",
                  tooltip=help_of(c, "kind")),
        FieldRow("Custom hours", "campaign.window_hours", state.parse_optional_float,
                 tooltip=help_of(c, "window_hours"), placeholder="or pick days"),
        FieldRow("Name", "campaign.name", state.parse_text, tooltip=help_of(c, "name")),
        FieldRow("Price/card-hour", "campaign.price_per_card_hour",
                 state.parse_optional_float, tooltip=help_of(c, "price_per_card_hour"),
                 placeholder="unknown"),
        FieldRow("Currency", "campaign.currency", state.parse_text,
                 tooltip=help_of(c, "currency")),
        FieldRow("Stack check h", "overheads.stack_check_hours", state.parse_float,
                 tooltip=help_of(o, "stack_check_hours")),
        FieldRow("Safety margin h", "overheads.safety_margin_hours", state.parse_float,
                 tooltip=help_of(o, "safety_margin_hours")),
        FieldRow("Startup min/run", "overheads.startup_minutes", state.parse_float,
                 tooltip=help_of(o, "startup_minutes")),
        FieldRow("Memory margin GiB", "overheads.memory_margin_gib", state.parse_float,
                 tooltip=help_of(o, "memory_margin_gib")),
    ]


class Choice(RadioButton):
    """A radio button whose dot is drawn only when chosen: the choice reads at a glance,
    in any colours (a plain RadioButton draws the dot on every button)."""

    BUTTON_INNER = " "

    def watch_value(self) -> None:
        self.BUTTON_INNER = "●" if self.value else " "
        super().watch_value()


class CampaignScreen(PlannerScreen):
    """Pick the window, the number of cards, the card model and the campaign kind."""

    MODE = "campaign"
    AUTO_FOCUS = "#cards"
    BINDINGS: ClassVar = [
        Binding("d", "window(3)", "3 days"),
        Binding("w", "window(7)", "7 days"),
        Binding("m", "window(30)", "30 days"),
        Binding("c", "focus_cards", "Card model"),
    ]

    _narrow = False

    def body(self) -> ComposeResult:
        with Horizontal(id="window-row"):
            yield Label("Window", classes="title")
            yield RadioSet(*(Choice(f"{d} days") for d in WINDOWS),
                           Choice("custom hours"), id="window", compact=True)
        with Grid(id="campaign-grid"):
            yield from _rows()
        yield Label("Card model: Enter or click (figures scale from the card they were "
                    "taken on)", classes="title", id="cards-title")
        table = CardTable(id="cards", cursor_type="row", zebra_stripes=True)
        yield table

    def on_mount(self) -> None:
        # Textual runs PlannerScreen.on_mount (the first redraw) after this handler.
        self._fill_cards(self.size.width or 80)

    def on_resize(self, event: events.Resize) -> None:
        if (event.size.width < WIDE_CARDS) != self._narrow:
            self._fill_cards(event.size.width)
            self._mark(self.planner.workspace)

    def _fill_cards(self, width: int) -> None:
        """The catalog, one row per card; narrow screens leave out the architecture (the
        compute capability names it) so every column stays whole."""
        self._narrow = width < WIDE_CARDS
        table = self.query_one(CardTable)
        row = table.cursor_row
        table.clear(columns=True)
        table.add_columns(" ", "card", "name", "memory", *(() if self._narrow else
                                                          ("architecture",)),
                          "CC", "BW GB/s", "BF16 TF", "price/h")
        for key, card in self.planner.catalog.cards.items():
            price = f"{card.price_per_card_hour:g}" if card.price_per_card_hour is not None \
                else "—"
            arch = () if self._narrow else (card.architecture,)
            table.add_row(" ", key, card.short_name, f"{card.memory_gib:g} GB", *arch,
                          card.sm, f"{card.bandwidth_gbps:g}", f"{card.bf16_tflops:.0f}", price,
                          key=key)
        if table.row_count:
            table.move_cursor(row=min(row, table.row_count - 1))

    def show(self, ws: Workspace) -> None:
        c, o = ws.preset.campaign, ws.preset.overheads
        values = {
            "campaign.cards": str(c.cards), "campaign.kind": c.kind,
            "campaign.window_hours": state.show_number(c.window_hours),
            "campaign.name": c.name,
            "campaign.price_per_card_hour": state.show_number(c.price_per_card_hour),
            "campaign.currency": c.currency,
            "overheads.stack_check_hours": state.show_number(o.stack_check_hours),
            "overheads.safety_margin_hours": state.show_number(o.safety_margin_hours),
            "overheads.startup_minutes": state.show_number(o.startup_minutes),
            "overheads.memory_margin_gib": state.show_number(o.memory_margin_gib),
        }
        for row in self.query(FieldRow):
            row.sync(values[row.path])
        radio = self.query_one(RadioSet)
        index = WINDOWS.index(c.window_days) if c.window_days in WINDOWS else len(WINDOWS)
        button = list(radio.query(RadioButton))[index]
        if not button.value:
            with radio.prevent(RadioSet.Changed):
                button.value = True
        self._mark(ws)

    def _mark(self, ws: Workspace) -> None:
        """● beside the card planned on, the cursor on it unless the list has focus."""
        card = ws.preset.campaign.card
        table = self.query_one(CardTable)
        for key in self.planner.catalog.cards:
            table.update_cell(key, table.ordered_columns[0].key, "●" if key == card else " ")
        if card in self.planner.catalog.cards and not table.has_focus:
            table.move_cursor(row=table.get_row_index(card), scroll=True)

    def edited(self, path: str, value: object) -> None:
        if path == "campaign.kind":
            self.planner.attempt(lambda p: state.switch_kind(p, str(value)))
        elif path == "campaign.price_per_card_hour":
            price = value if isinstance(value, float) else None
            self.planner.attempt(lambda p: state.set_price(p, price))
        elif path == "campaign.window_hours":
            if isinstance(value, float):
                self.planner.attempt(lambda p: state.set_window(p, None, value))
        else:
            super().edited(path, value)

    def on_radio_set_changed(self, event: RadioSet.Changed) -> None:
        event.stop()
        if event.index < len(WINDOWS):
            self.action_window(WINDOWS[event.index])
        else:
            hours = self.planner.workspace.preset.campaign.hours
            self.planner.attempt(lambda p: state.set_window(p, None, hours))

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key is not None:
            self.planner.attempt(lambda p: state.set_card(p, str(key)))

    def action_window(self, days: int) -> None:
        """Rent for a standard number of days."""
        self.planner.attempt(lambda p: state.set_window(p, days))

    def action_focus_cards(self) -> None:
        """Move to the card list."""
        self.query_one(CardTable).focus()

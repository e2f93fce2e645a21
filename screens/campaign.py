"""Campaign screen: the window, the cards rented, the card model, the kind."""

from __future__ import annotations

from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal
from textual.widgets import DataTable, Label, RadioButton, RadioSet

from planner.preset import Campaign, Overheads
from screens import state
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import ChoiceRow, FieldRow, help_of

WINDOWS = (3, 7, 30)


class CardTable(DataTable[str]):
    """The catalog, one card per row; Enter or a click chooses the card."""

    async def _on_click(self, event: events.Click) -> None:
        before = self.cursor_row
        await super()._on_click(event)
        # One click chooses, as people expect of a list of options.
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

    def body(self) -> ComposeResult:
        with Horizontal(id="window-row"):
            yield Label("Window", classes="title")
            yield RadioSet(*(RadioButton(f"{d} days") for d in WINDOWS),
                           RadioButton("custom hours"), id="window", compact=True)
        with Grid(id="campaign-grid"):
            yield from _rows()
        yield Label("Card model: Enter or click (figures scale from the card they were "
                    "taken on)", classes="title", id="cards-title")
        table = CardTable(id="cards", cursor_type="row", zebra_stripes=True)
        yield table

    def on_mount(self) -> None:
        table = self.query_one(CardTable)
        table.add_columns(" ", "card", "memory", "architecture", "CC", "BW GB/s", "BF16 TF",
                          "price/h")
        table.add_column("name", width=24)
        cat = self.planner.catalog
        for key, card in cat.cards.items():
            price = f"{card.price_per_card_hour:g}" if card.price_per_card_hour is not None \
                else "—"
            table.add_row(" ", key, f"{card.memory_gib:g} GB", card.architecture, card.sm,
                          f"{card.bandwidth_gbps:g}", f"{card.bf16_tflops:.0f}", price,
                          card.name.removeprefix("NVIDIA "), key=key)
        super().on_mount()

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
        table = self.query_one(CardTable)
        for key in self.planner.catalog.cards:
            table.update_cell(key, table.ordered_columns[0].key, "●" if key == c.card else " ")
        if c.card in self.planner.catalog.cards and not table.has_focus:
            table.move_cursor(row=table.get_row_index(c.card), scroll=True)

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

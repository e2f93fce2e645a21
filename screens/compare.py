"""Compare screen: the same campaign on other card models, side by side; only the card
changes (planner.compare does the planning)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Label, Static

from planner.compare import DEFAULT_CARDS, CardComparison, compare_cards
from planner.errors import InputError
from screens import state
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import FieldRow


def per_config(table: DataTable[Any], rows: list[CardComparison]) -> None:
    """Fill `table`: memory headroom and step time of each configuration on each card."""
    table.clear(columns=True)
    planned = [r for r in rows if r.planned and r.configs]
    if not planned:
        return
    table.add_columns("config", *(r.card for r in planned))
    for i, c in enumerate(planned[0].configs):
        cells: list[Any] = []
        for r in planned:
            on = r.configs[i]
            span = f" ({on.step_time_range})" if on.step_time_range else ""
            cells.append(Text(f"{on.headroom_gib:+.1f} GiB {on.step_time_s:.3g} s{span}"
                              + ("" if on.fits else " ✗"), "" if on.fits else "red"))
        table.add_row(c.config, *cells)


class CompareScreen(PlannerScreen):
    """Plan the campaign on several card models; Enter adopts the selected card."""

    MODE = "compare"
    AUTO_FOCUS = "#comparison"
    BINDINGS: ClassVar = [
        Binding("a", "all_cards", "All cards"),
        Binding("r", "default_cards", "Default cards"),
        Binding("f", "toggle_analytic", "Analytic figures"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.cards: list[str] = list(DEFAULT_CARDS)
        self.analytic = False

    def body(self) -> ComposeResult:
        with VerticalScroll(id="compare"):
            yield FieldRow("Cards to compare", "compare.cards", state.parse_words,
                           ", ".join(self.cards), tooltip="Catalog keys, separated by commas")
            yield Static("", id="compare-message", classes="message", markup=False)
            yield DataTable(id="comparison", cursor_type="row", zebra_stripes=True)
            yield Label("Per configuration: memory headroom under the budget, step time "
                        "(✗ does not fit)", classes="section")
            yield DataTable(id="per-config", show_cursor=False, zebra_stripes=True)
            yield Label("Provenance of the figures", classes="section")
            yield Static("", id="compare-provenance", markup=False)

    def on_mount(self) -> None:
        self.query_one("#comparison", DataTable).add_columns(
            " ", "card", "memory", "fit", "last ends", "util", "cost", "name")
        super().on_mount()
        # Focusing the table scrolls the page to it; keep the cards field in sight.
        self.call_after_refresh(self.query_one("#compare").scroll_home, animate=False)

    def _keys(self, ws: Workspace) -> list[str]:
        keys = [k for k in self.cards if k]
        current = ws.preset.campaign.card
        return keys if current in keys else [current, *keys]

    def show(self, ws: Workspace) -> None:
        message = self.query_one("#compare-message", Static)
        try:
            rows = compare_cards(ws.preset, self.planner.catalog, self._keys(ws),
                                 ws.measurements, analytic=self.analytic)
        except InputError as exc:
            message.set_class(True, "-error")
            message.update(f"✗ {exc}")
            return
        source = ("measurements" if ws.measurements is not None else
                  "analytic formulas" if self.analytic else "the preset's figures, scaled")
        message.set_class(False, "-error")
        message.update(f"{ws.preset.campaign.cards} cards × {ws.preset.campaign.hours:g} h "
                       f"on each card model; figures: {source}. Enter plans on the selected one.")
        self._table(ws, rows)
        per_config(self.query_one("#per-config", DataTable), rows)
        said = list(dict.fromkeys(w for r in rows for w in r.warnings))
        self.query_one("#compare-provenance", Static).update("\n".join(
            [f"{r.card}: {'; '.join(r.provenance) if r.planned else r.error}" for r in rows]
            + [f"⚠ {w}" for w in said]))

    def _table(self, ws: Workspace, rows: list[CardComparison]) -> None:
        table = self.query_one("#comparison", DataTable)
        row_at = table.cursor_row
        table.clear()
        best = max((r.runs_fit for r in rows if r.planned), default=0)
        for r in rows:
            mark = "●" if r.card == ws.preset.campaign.card else " "
            if not r.planned:
                table.add_row(mark, r.card, f"{r.memory_gib:g} GB", "—", "—", "—", "—",
                              Text(f"cannot plan: {r.error}", "red"), key=r.card)
                continue
            fit: Any = f"{r.runs_fit}/{r.runs_total}"
            if r.runs_fit == best:
                fit = Text(fit, "bold green")
            cost = f"{r.cost_total:,.0f} {r.currency}" if r.cost_total is not None else "—"
            table.add_row(mark, r.card, f"{r.memory_gib:g} GB", fit, f"h {r.makespan_h:.1f}",
                          f"{r.utilization:.0%}", cost, r.card_name, key=r.card)
        if table.row_count:
            table.move_cursor(row=min(row_at, table.row_count - 1))

    def edited(self, path: str, value: object) -> None:
        self.cards = list(value) if isinstance(value, list) else []
        self._redraw(self.planner.workspace)

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        key = event.row_key.value
        if key is None or key == self.planner.workspace.preset.campaign.card:
            return
        # Only the card changes: every figure keeps the card it was taken on, and the plan
        # derives it for the new card, so coming back gives the same plan.
        if self.planner.attempt(lambda p: state.set_card(p, str(key))):
            self.notify(f"Planning on {key}; figures scaled from the cards they were taken on")

    def _set_cards(self, keys: list[str]) -> None:
        self.cards = keys
        self.query_one(FieldRow).sync(", ".join(keys))
        self._redraw(self.planner.workspace)

    def action_all_cards(self) -> None:
        """Compare on every card of the catalog."""
        self._set_cards(list(self.planner.catalog.cards))

    def action_default_cards(self) -> None:
        """Compare on the usual 48 GB cards and the A100 80 GB."""
        self._set_cards(list(DEFAULT_CARDS))

    def action_toggle_analytic(self) -> None:
        """Switch between the preset's figures (scaled) and the analytic formulas."""
        self.analytic = not self.analytic
        self._redraw(self.planner.workspace)

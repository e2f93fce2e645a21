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


def per_config(rows: list[CardComparison]) -> str:
    """Memory headroom and step time of each configuration on each card."""
    planned = [r for r in rows if r.planned and r.configs]
    if not planned:
        return ""
    names = [c.config for c in planned[0].configs]
    width = max(len("config"), *(len(n) for n in names))
    head = f"{'config':<{width}} " + " ".join(f"{r.card:>13}" for r in planned)
    lines = [head]
    for i, name in enumerate(names):
        cells = []
        for r in planned:
            c = r.configs[i]
            cells.append(f"{c.headroom_gib:+6.1f}G {c.step_time_s:5.3g}s"
                         + ("" if c.fits else "✗"))
        lines.append(f"{name:<{width}} " + " ".join(f"{cell:>13}" for cell in cells))
    return "\n".join(lines)


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
            yield Static("", id="per-config", markup=False)
            yield Label("Provenance of the figures", classes="section")
            yield Static("", id="compare-provenance", markup=False)

    def on_mount(self) -> None:
        self.query_one("#comparison", DataTable).add_columns(
            " ", "card", "memory", "fit", "last ends", "util", "cost", "name")
        super().on_mount()

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
        self.query_one("#per-config", Static).update(per_config(rows))
        self.query_one("#compare-provenance", Static).update("\n".join(
            f"{r.card}: {'; '.join(r.provenance) if r.planned else r.error}" for r in rows))

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
        if event.row_key.value is not None:
            self.planner.edit("campaign", card=event.row_key.value)
            self.notify(f"Planning on {event.row_key.value}")

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

"""Compare screen: the same campaign on other card models, side by side; only the card
changes (planner.advise.compare does the planning)."""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Label, Static

from planner.advise.compare import DEFAULT_CARDS, CardComparison, compare_cards
from planner.errors import InputError
from screens import state
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import FieldRow
from screens.widgets.tables import fill


def side_by_side_width(rows: list[CardComparison], ranged: bool = True) -> int:
    """Columns the side-by-side table needs: config names, then one cell per card."""
    planned = [r for r in rows if r.planned and r.configs]
    if not planned:
        return 0
    name_w = max(len("config"), *(len(c.config) for c in planned[0].configs))
    return name_w + 2 + sum(max(len(r.card), *(len(_cell(on, ranged)) for on in r.configs)) + 2
                            for r in planned)


def _cell(on: Any, ranged: bool = True) -> Text:
    span = f" ({on.step_time_range})" if ranged and on.step_time_range else ""
    return Text(f"{on.headroom_gib:+.1f} GiB {on.step_time_s:.3g} s{span}"
                + ("" if on.fits else " ✗"), "" if on.fits else "red")


def per_config(table: DataTable[Any], rows: list[CardComparison], width: int = 1000) -> str:
    """Fill `table` with each configuration's memory headroom and step time on each card:
    side by side when the cards fit in `width`, else card by card with the configurations
    under each. Returns the section's title."""
    planned = [r for r in rows if r.planned and r.configs]
    if not planned:
        fill(table, [], [])
        return "Per configuration: nothing planned on these cards"
    # Side by side with the step-time ranges, else without them (the card-by-card layout
    # below keeps them), else card by card.
    for ranged in (True, False):
        if side_by_side_width(rows, ranged) <= width:
            fill(table, ["config", *(r.card for r in planned)],
                 [[c.config, *(_cell(r.configs[i], ranged) for r in planned)]
                  for i, c in enumerate(planned[0].configs)])
            return ("Per configuration on each card: memory headroom under the budget, step "
                    "time" + (" (range)" if ranged else "") + " (✗ too big)")
    cells = []
    for r in planned:
        for i, on in enumerate(r.configs):
            style = "" if on.fits else "red"
            cells.append([Text(r.card, "bold") if i == 0 else "", on.config,
                          Text(f"{on.headroom_gib:+.1f} GiB", style),
                          f"{on.step_time_s:.3g}"
                          + (f" ({on.step_time_range})" if on.step_time_range else ""),
                          Text("✓" if on.fits else "✗ too big", "green" if on.fits else style)])
    fill(table, ["card", "config", "headroom", "step s", "fits"], cells)
    return "Per card, each configuration: memory headroom under the budget, step time"


def per_card_throughput(table: DataTable[Any], rows: list[CardComparison]) -> str:
    """Fill `table` with each card's embedding throughput and where it comes from."""
    fill(table, ["card", "tokens/s per card", "last ends", "source"],
         [[r.card, f"{r.throughput_tokens_per_s:,.0f}", f"h {r.makespan_h:.1f}",
           "; ".join(r.provenance)]
          for r in rows if r.planned and r.throughput_tokens_per_s is not None])
    return "Per card: embedding throughput"


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
        self._rows: list[CardComparison] = []

    def body(self) -> ComposeResult:
        with VerticalScroll(id="compare"):
            yield FieldRow("Cards to compare", "compare.cards", state.parse_words,
                           ", ".join(self.cards), tooltip="Catalog keys, separated by commas")
            yield Static("", id="compare-message", classes="message", markup=False)
            yield DataTable(id="comparison", cursor_type="row", zebra_stripes=True)
            yield Label("Per configuration", classes="section", id="per-config-title")
            yield DataTable(id="per-config", show_cursor=False, zebra_stripes=True)
            yield Label("Provenance of the figures", classes="section")
            yield Static("", id="compare-provenance", markup=False)

    def on_mount(self) -> None:
        # Textual runs PlannerScreen.on_mount (the first redraw) after this handler.
        self.query_one("#comparison", DataTable).add_columns(
            " ", "card", "memory", "fit", "last ends", "util", "cost", "name")
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
        self._rows = rows
        self._table(ws, rows)
        self._per_config()
        said = list(dict.fromkeys(w for r in rows for w in r.warnings))
        self.query_one("#compare-provenance", Static).update("\n".join(
            [f"{r.card}: {'; '.join(r.provenance) if r.planned else r.error}" for r in rows]
            + [f"⚠ {w}" for w in said]))

    def _per_config(self) -> None:
        table = self.query_one("#per-config", DataTable)
        if self.planner.workspace.preset.embedding is not None:
            title = per_card_throughput(table, self._rows)
        else:
            # The page's width less its padding and scroll bar.
            title = per_config(table, self._rows, (self.size.width or 80) - 4)
        self.query_one("#per-config-title", Label).update(title)

    def on_resize(self, event: events.Resize) -> None:
        if self._rows:
            self._per_config()

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
                          f"{r.utilization:.0%}", cost, self._short(r), key=r.card)
        if table.row_count:
            table.move_cursor(row=min(row_at, table.row_count - 1))

    def _short(self, r: CardComparison) -> str:
        card = self.planner.catalog.cards.get(r.card)
        return card.short_name if card is not None else r.card_name

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

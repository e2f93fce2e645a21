"""Advise screen: the orders (card model × count × window) that fit the campaign, best
first, with the columns of `campaign-planner advise`, then the frontier and the closest
orders; Enter (anywhere on the screen), the Adopt button or the palette adopts the
highlighted one. planner.advise.search does the search, in a thread worker.

Figures always derive from the campaign as it was before any adoption here (its anchor),
so adopting one option after another never scales an already scaled figure.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.widgets import Button, DataTable, Label, Static
from textual.worker import Worker, WorkerState, get_current_worker

from planner.advise.goal import Goal, check_goal, goal_preset, parse_goal
from planner.advise.model import Advice, Option, Space
from planner.advise.render import frontier_table, reach, shortfalls
from planner.advise.search import advise, order_preset
from planner.errors import InputError
from planner.spec.preset import Preset
from screens import state
from screens.advise_columns import PADDING, chosen, legend
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import FieldRow
from screens.widgets.tables import fill

RANKING = {"cost": "cheapest first", "card-hours": "no price known: fewest card-hours first",
           "cost, then card-hours": "cheapest first, then unpriced ones by card-hours"}
"""The ranking in a few words (the message's tooltip has it in full)."""


class _Stopped(Exception):
    """A newer search replaced this one."""


def _goal(text: str) -> Goal:
    try:
        return parse_goal(text)
    except InputError as exc:
        raise ValueError(exc.message) from None


def _key(o: Option) -> str:
    return f"{o.card}|{o.cards}|{o.window_days}"


class AdviseScreen(PlannerScreen):
    """Every order of the space planned; those meeting the goal listed, best first."""

    MODE = "advise"
    AUTO_FOCUS = "#advise-options"
    BINDINGS: ClassVar = [Binding("enter", "adopt", "Adopt"),
                          Binding("f", "frontier", "Frontier")]

    def __init__(self) -> None:
        super().__init__()
        self.goal = Goal("all")
        self.cards: tuple[str, ...] | None = None
        self.result: Advice | None = None
        self._token = 0
        self._shown = -1
        """Token of the search whose result the table shows."""
        self._anchor: Preset | None = None
        self._adopted: Preset | None = None

    def body(self) -> ComposeResult:
        with VerticalScroll(id="advise"):
            with Vertical(id="advise-top"):
                # Enter in a field adopts, as in the table: the focus stays where it is.
                yield FieldRow("Goal", "advise.goal", _goal, "all", advance=False,
                               tooltip="all, seeds:K, runs:N or versions:K; Enter adopts "
                                       "the highlighted order")
                yield FieldRow("Cards (empty: all)", "advise.cards", state.parse_words, "",
                               advance=False,
                               tooltip="Catalog keys; empty: every card with the memory. "
                                       "Enter adopts the highlighted order")
                yield Static("", id="advise-message", classes="message", markup=False)
                yield DataTable(id="advise-options", cursor_type="row", zebra_stripes=True,
                                cell_padding=PADDING)
                with Horizontal(id="adopt-row"):
                    yield Button("Adopt (Enter)", id="adopt", compact=True,
                                 variant="primary")
                    yield Static("", id="advise-pick", markup=False)
                yield Static("", id="advise-detail", markup=False)
                yield Static("", id="advise-legend", classes="hint", markup=False)
            yield Label("Smallest count that meets the goal, per card and window (—: none)",
                        classes="section")
            yield Static("", id="advise-frontier", markup=False)
            yield Label("Where no count meets it: the closest order, and what it would need",
                        classes="section", id="advise-closest-title")
            yield Static("", id="advise-closest", markup=False)

    def on_mount(self) -> None:
        # Textual runs PlannerScreen.on_mount (the first redraw) after this handler.
        self.call_after_refresh(self.query_one("#advise").scroll_home, animate=False)

    def on_screen_suspend(self) -> None:
        # A search still running when the screen is left stops: planning every order takes
        # a core (and the interpreter's lock) from the screen shown now. It starts again
        # when Advise comes back.
        if self._shown != self._token:
            self.workers.cancel_group(self, "advise")
            self._seen = -1

    def base(self, ws: Workspace) -> Preset:
        """The campaign the search starts from: the anchor while the workspace holds the
        order adopted here, else the workspace's own preset (which becomes the anchor)."""
        if self._anchor is None or ws.preset != self._adopted:
            self._anchor, self._adopted = ws.preset, None
        return self._anchor

    def show(self, ws: Workspace) -> None:
        preset = self.base(ws)
        try:
            check_goal(self.goal, preset, field="goal")
            for key in self.cards or ():
                self.planner.catalog.get(key, field="cards")
        except InputError as exc:
            self._message(f"✗ {exc}", error=True)
            return
        self._token += 1
        self._message("Planning every order…")
        self._search(self._token, preset, Space(self.cards), self.goal, ws.measurements)

    @work(thread=True, exclusive=True, exit_on_error=False, group="advise", name="advise")
    def _search(self, token: int, preset: Preset, space: Space, goal: Goal,
                measurements: Any) -> tuple[int, Advice]:
        worker = get_current_worker()

        def progress(done: int, total: int) -> None:
            if worker.is_cancelled:
                raise _Stopped

        return token, advise(preset, self.planner.catalog, space, goal,
                             measurements=measurements, progress_fn=progress)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "advise":
            return
        if event.state == WorkerState.SUCCESS and event.worker.result is not None:
            token, result = event.worker.result
            if token == self._token:
                self._shown = token
                self._fill(result)
        elif event.state == WorkerState.ERROR and not isinstance(event.worker.error,
                                                                 _Stopped):
            self._message(f"✗ {event.worker.error}", error=True)

    def _fill(self, result: Advice) -> None:
        self.result = result
        table = self.query_one("#advise-options", DataTable)
        # The screen's padding and two scrollbars (the page's and the table's) take 6.
        columns = chosen(result.options, max(self.size.width - 6, 40))
        current = self._order(self.planner.workspace.preset)
        rows = [[Text("●" if (o.card, o.cards, o.window_days) == current else " "),
                 Text(str(i), justify="right"),
                 *(Text(c.cell(o), justify="right" if c.right else "left") for c in columns)]
                for i, o in enumerate(result.options, 1)]
        fill(table, [" ", "#", *(c.header for c in columns)], rows,
             [_key(o) for o in result.options])
        self.query_one("#advise-legend", Static).update(legend(columns))
        self.query_one("#advise-frontier", Static).update("\n".join(
            line.removeprefix("  ") for line in frontier_table(result)))
        short = shortfalls(result.frontier)
        self.query_one("#advise-closest-title").display = bool(short)
        self.query_one("#advise-closest", Static).update("\n".join(
            line.removeprefix("  ") for line in short))
        self.query_one("#adopt", Button).disabled = not result.options
        if result.options:
            self._message(f"{len(result.options)} of {result.planned} orders meet the goal "
                          f"{result.goal}; {RANKING[result.ranked_by]}.")
            self.query_one("#advise-message").tooltip = f"Ranked {result.ranking_note}"
        else:
            closest = result.best_reachable
            self._message(f"No order meets the goal {result.goal}."
                          + (f" Closest: {reach(closest)}; it would need: "
                             + "; ".join(closest.needs) if closest else ""), error=True)
        self._detail()

    def on_resize(self, event: events.Resize) -> None:
        if self.result is not None:
            self._fill(self.result)
        self.call_after_refresh(self._size_top)

    def _size_top(self) -> None:
        """As many rows as the height allows: the part down to the legend is as tall as
        the view, the table taking what the rest leaves; the frontier and the closest
        orders follow (`f`, or scroll)."""
        height = self.query_one("#advise", VerticalScroll).scrollable_content_region.height
        top = self.query_one("#advise-top")
        if height > 0 and (top.styles.height is None or top.styles.height.value != height):
            top.styles.height = height

    @staticmethod
    def _order(p: Preset) -> tuple[str, int, int] | None:
        c = p.campaign
        return (c.card, c.cards, c.window_days) if c.window_days else None

    def _selected(self) -> Option | None:
        table = self.query_one("#advise-options", DataTable)
        if self.result is None or not table.row_count or not self.result.options:
            return None
        return self.result.options[min(table.cursor_row, len(self.result.options) - 1)]

    def _detail(self) -> None:
        o = self._selected()
        self.query_one("#advise-pick", Static).update(
            "" if o is None else f"{o.cards} × {o.card_name}, {o.window_days} days")
        self.query_one("#advise-detail", Static).update(Text(
            "" if o is None else
            ("" if o.first_complete_seed_end_h is None else
             f"first seed set ends at hour {o.first_complete_seed_end_h:.1f} · ")
            + f"{o.idle_card_hours:.1f} idle card-hours · {o.hours_left_h:.1f} h left before the "
            "usable window closes · memory headroom "
            + ("—" if o.min_headroom_gib is None else f"{o.min_headroom_gib:.1f} GiB")
            + f" · figures {', '.join(o.figures)}", "dim"))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.adopt_highlighted()

    def on_field_row_submitted(self, message: FieldRow.Submitted) -> None:
        message.stop()
        self.adopt_highlighted()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.adopt_highlighted()

    def action_adopt(self) -> None:
        """Adopt the highlighted order (Enter where no widget takes it)."""
        self.adopt_highlighted()

    def action_frontier(self) -> None:
        """Scroll to the frontier and the closest orders."""
        self.query_one("#advise-frontier").scroll_visible(top=True, animate=False)

    def adopt_highlighted(self) -> bool:
        """Plan on the highlighted order; False when there is none yet or it is refused.
        While a newer search runs, the highlighted row may no longer be an answer to what
        was typed, so nothing is adopted until it shows."""
        if self._shown != self._token:
            self.notify("Still planning every order: adopt once the list shows")
            return False
        o = self._selected()
        if o is None or self._anchor is None:
            self.notify("No order to adopt: none meets the goal")
            return False
        ws = self.planner.workspace
        try:
            # The order as ranked: with the seeds a `seeds:K` goal adds.
            adopted = state.validated(order_preset(goal_preset(self.goal, self._anchor),
                                                   self.planner.catalog, o.card, o.cards,
                                                   o.window_days, ws.measurements))
        except InputError as exc:
            self._message(f"✗ {exc}", error=True)
            return False
        self._adopted = adopted
        if self.planner.attempt(lambda _p: adopted):
            self.notify(f"Planning on {o.cards} × {o.card}, {o.window_days} days")
            return True
        return False

    def edited(self, path: str, value: object) -> None:
        if path == "advise.goal" and isinstance(value, Goal):
            self.goal = value
        elif path == "advise.cards":
            keys = tuple(value) if isinstance(value, list) else ()
            self.cards = keys or None
        self._redraw(self.planner.workspace)

    def invalid(self, path: str, message: str) -> None:
        self._message(f"✗ {path.removeprefix('advise.')}: {message}", error=True)

    def _message(self, text: str, *, error: bool = False) -> None:
        widget = self.query_one("#advise-message", Static)
        widget.set_class(error, "-error")
        widget.update(text)

"""Advise screen: the orders (card model × count × window) that fit the campaign, best
first; Enter adopts the selected one. planner.advise.search does the search, in a thread worker.

Figures always derive from the campaign as it was before any adoption here (its anchor),
so adopting one option after another never scales an already scaled figure.
"""

from __future__ import annotations

from typing import Any, ClassVar

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.widgets import DataTable, Label, Static
from textual.worker import Worker, WorkerState, get_current_worker

from planner.advise.goal import Goal, check_goal, goal_preset, parse_goal
from planner.advise.model import Advice, Option, Space
from planner.advise.render import cost, first_set, frontier_table, reach, seeds, sets
from planner.advise.search import advise, order_preset
from planner.errors import InputError
from planner.spec.preset import Preset
from screens import state
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import FieldRow


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
    BINDINGS: ClassVar = []

    def __init__(self) -> None:
        super().__init__()
        self.goal = Goal("all")
        self.cards: tuple[str, ...] | None = None
        self.result: Advice | None = None
        self._token = 0
        self._anchor: Preset | None = None
        self._adopted: Preset | None = None

    def body(self) -> ComposeResult:
        with VerticalScroll(id="advise"):
            yield FieldRow("Goal", "advise.goal", _goal, "all",
                           tooltip="all, seeds:K, runs:N or versions:K")
            yield FieldRow("Cards (empty: all)", "advise.cards", state.parse_words, "",
                           tooltip="Catalog keys; empty: every card with the memory")
            yield Static("", id="advise-message", classes="message", markup=False)
            yield DataTable(id="advise-options", cursor_type="row", zebra_stripes=True)
            yield Static("", id="advise-detail", markup=False)
            yield Label("Smallest count that meets the goal (—: none)", classes="section")
            yield Static("", id="advise-frontier", markup=False)

    def on_mount(self) -> None:
        self.query_one("#advise-options", DataTable).add_columns(
            " ", "#", "card", "cards", "days", "cost", "runs", "seeds", "sets", "1st set", "idle")
        super().on_mount()
        self.call_after_refresh(self.query_one("#advise").scroll_home, animate=False)

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
                self._fill(result)
        elif event.state == WorkerState.ERROR and not isinstance(event.worker.error,
                                                                 _Stopped):
            self._message(f"✗ {event.worker.error}", error=True)

    def _fill(self, result: Advice) -> None:
        self.result = result
        table = self.query_one("#advise-options", DataTable)
        at = table.cursor_row
        table.clear()
        current = self._order(self.planner.workspace.preset)
        for i, o in enumerate(result.options, 1):
            mark = "●" if (o.card, o.cards, o.window_days) == current else " "
            table.add_row(mark, str(i), o.card, str(o.cards), str(o.window_days), cost(o),
                          f"{o.runs_fit}/{o.runs_total}", seeds(o), sets(o), first_set(o),
                          f"{o.idle_card_hours:.0f}", key=_key(o))
        if table.row_count:
            table.move_cursor(row=min(at, table.row_count - 1))
        self.query_one("#advise-frontier", Static).update("\n".join(
            line.removeprefix("  ") for line in frontier_table(result)))
        if result.options:
            ranking = {"cost": "cheapest first",
                       "card-hours": "no price known: fewest card-hours first",
                       "cost, then card-hours": "cheapest first, then unpriced ones by "
                                                "card-hours"}[result.ranked_by]
            self._message(f"{len(result.options)} of {result.planned} orders meet the goal "
                          f"{result.goal}; {ranking}. Enter adopts the selected one.")
        else:
            closest = result.best_reachable
            self._message(f"No order meets the goal {result.goal}."
                          + (f" Closest: {reach(closest)}; it would need: "
                             + "; ".join(closest.needs) if closest else ""), error=True)
        self._detail()

    @staticmethod
    def _order(p: Preset) -> tuple[str, int, int] | None:
        c = p.campaign
        return (c.card, c.cards, c.window_days) if c.window_days else None

    def _selected(self) -> Option | None:
        table = self.query_one("#advise-options", DataTable)
        if self.result is None or not table.row_count:
            return None
        return self.result.options[min(table.cursor_row, len(self.result.options) - 1)]

    def _detail(self) -> None:
        o = self._selected()
        self.query_one("#advise-detail", Static).update(Text(
            "" if o is None else
            f"{o.hours_left_h:.1f} h left before the usable window closes · memory headroom "
            + ("—" if o.min_headroom_gib is None else f"{o.min_headroom_gib:.1f} GiB")
            + f" · figures {', '.join(o.figures)}", "dim"))

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        event.stop()
        self._detail()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        o = self._selected()
        if o is None or self._anchor is None:
            return
        ws = self.planner.workspace
        try:
            # The order as ranked: with the seeds a `seeds:K` goal adds.
            adopted = state.validated(order_preset(goal_preset(self.goal, self._anchor),
                                                   self.planner.catalog, o.card, o.cards,
                                                   o.window_days, ws.measurements))
        except InputError as exc:
            self._message(f"✗ {exc}", error=True)
            return
        self._adopted = adopted
        if self.planner.attempt(lambda _p: adopted):
            self.notify(f"Planning on {o.cards} × {o.card}, {o.window_days} days")

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

"""The per-card timeline (Gantt): each run as a labelled bar, the reserved hours shaded,
the window's end marked; zoom (+/−), pan ([ ]) and a cursor on a run (arrows) whose id,
start, end and figures the screen shows. Hovering a bar names the run too."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message

from planner.planfile.plan import Plan, Run
from screens.widgets.gantt_draw import View, draw, per_card, run_at
from screens.widgets.lines import Lines

__all__ = ["Timeline", "count"]


def count(plan: Plan, width: int) -> int:
    """Lines the timeline has: one per card and the axis."""
    return plan.campaign.cards + 1


class Timeline(Lines):
    """Runs on cards over the window: one line per card and an hour axis."""

    can_focus = True
    BINDINGS: ClassVar = [
        # Named on the line under the timeline with the other keys of it, not in the key
        # bar, which keeps its room at 80 columns for the screen's keys and Undo.
        Binding("plus,equals_sign", "zoom(1)", "Zoom in", show=False),
        Binding("minus", "zoom(-1)", "Zoom out", show=False),
        Binding("left_square_bracket", "pan(-0.5)", "Earlier", show=False),
        Binding("right_square_bracket", "pan(0.5)", "Later", show=False),
        Binding("left", "step(-1)", "Previous run", show=False),
        Binding("right", "step(1)", "Next run", show=False),
        Binding("up", "card(-1)", "Card above", show=False),
        Binding("down", "card(1)", "Card below", show=False),
        Binding("0", "whole", "Whole window", show=False),
    ]
    DEFAULT_CSS = """
    Timeline:focus { background-tint: $accent 8%; }
    """

    class Moved(Message):
        """The cursor, the zoom, the pan or the focus changed (not the plan: whoever
        shows a new plan reads `cursor_run` then): the run under the cursor."""

        def __init__(self, timeline: Timeline, run: Run | None) -> None:
            super().__init__()
            self.timeline = timeline
            self.run = run

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(self._lines, count=count, id=id)
        self.view = View()
        self.coded = False
        """Whether the last drawing shortened a label to its code."""

    def _lines(self, plan: Plan, width: int) -> list[Text]:
        lines, self.coded = draw(plan, width, self.view)
        return lines

    def show(self, plan: Plan) -> None:
        """Draw this plan; the cursor stays on its run when the plan still has it."""
        ids = {r.id for r in plan.runs}
        if self.view.cursor not in ids:
            first = min(plan.runs, key=lambda r: (r.card[0], r.start_h), default=None)
            self.view = View(self.view.zoom, self.view.start_h,
                             first.id if first else None).clamped(plan.campaign.window_hours)
        super().show(plan)

    def cursor_run(self) -> Run | None:
        """The run under the cursor."""
        if self.plan is None:
            return None
        return next((r for r in self.plan.runs if r.id == self.view.cursor), None)

    def _set(self, view: View) -> None:
        if self.plan is None:
            return
        self.view = view.clamped(self.plan.campaign.window_hours)
        self.show(self.plan)
        self.post_message(self.Moved(self, self.cursor_run()))

    def action_zoom(self, by: int) -> None:
        """Zoom in (1) or out (-1) around the cursor's run (or the middle of the view)."""
        if self.plan is None:
            return
        window = self.plan.campaign.window_hours
        run = self.cursor_run()
        span = self.view.span(window)
        around = (run.start_h if run and self.view.start_h <= run.start_h
                  < self.view.start_h + span else self.view.start_h + span / 2)
        self._set(self.view.zoomed(by, window, around))

    def action_pan(self, fraction: float) -> None:
        """Move the view by a fraction of its span."""
        if self.plan is not None:
            self._set(self.view.panned(fraction, self.plan.campaign.window_hours))

    def action_whole(self) -> None:
        """Show the whole window."""
        self._set(View(0, 0.0, self.view.cursor))

    def _card_runs(self) -> tuple[int, list[Run]]:
        cards = per_card(self.plan) if self.plan else []
        run = self.cursor_run()
        card = run.card[0] if run else 0
        return card, cards[card] if card < len(cards) else []

    def action_step(self, by: int) -> None:
        """The cursor to the previous (-1) or next (1) run on its card; the view follows."""
        if self.plan is None:
            return
        _, runs = self._card_runs()
        ids = [r.id for r in runs]
        if not runs:
            return
        at = ids.index(self.view.cursor) if self.view.cursor in ids else 0
        run = runs[max(0, min(len(runs) - 1, at + by))]
        self._set(self.view.showing(run, self.plan.campaign.window_hours))

    def action_card(self, by: int) -> None:
        """The cursor to the run at the same hour on the card above (-1) or below (1)."""
        if self.plan is None:
            return
        cards = per_card(self.plan)
        here = self.cursor_run()
        card, hour = (here.card[0], here.start_h) if here else (0, 0.0)
        target = card + by
        while 0 <= target < len(cards) and not cards[target]:
            target += by
        if not 0 <= target < len(cards):
            return
        run = min(cards[target], key=lambda r: abs(r.start_h - hour))
        self._set(self.view.showing(run, self.plan.campaign.window_hours))

    def on_focus(self, event: events.Focus) -> None:
        self.post_message(self.Moved(self, self.cursor_run()))

    def on_blur(self, event: events.Blur) -> None:
        self.post_message(self.Moved(self, self.cursor_run()))

    def on_click(self, event: events.Click) -> None:
        run = self._at(event.x, event.y)
        if run is not None and self.plan is not None:
            self._set(self.view.showing(run, self.plan.campaign.window_hours))

    def _at(self, x: int, y: int) -> Run | None:
        if self.plan is None:
            return None
        return run_at(self.plan, self.size.width, x, y, self.view)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        run = self._at(event.x, event.y)
        self.tooltip = (f"{run.id}\nhours {run.start_h:.1f}–{run.end_h:.1f} on card "
                        f"{', '.join(map(str, run.card))}" if run else None)

"""The per-card timeline (Gantt): each run as a labelled bar, the reserved hours shaded,
the window's end marked. Hovering a bar names the run."""

from __future__ import annotations

from rich.style import Style
from rich.text import Text
from textual import events

from planner.planning.plan import Plan, Run
from screens.widgets.lines import Lines

PALETTE = ("#3b82f6", "#10b981", "#f59e0b", "#8b5cf6", "#ef4444", "#06b6d4", "#84cc16",
           "#ec4899", "#64748b", "#14b8a6")
LABEL_W = 5


def run_label(run: Run) -> str:
    """Short text drawn inside a run's bar."""
    if run.kind == "embed":
        return f"{run.variant}·{run.shard}"
    if run.kind == "robustness":
        return f"{run.variant}·{run.seed}·eval"
    return f"{run.variant}·{run.seed}"


def _step(window_h: float, columns: int) -> float:
    for step in (1, 2, 3, 6, 12, 24, 48, 72, 120, 168, 240, 336, 720):
        if columns * step / window_h >= 8:
            return float(step)
    return window_h


def _tick(h: float) -> str:
    return f"{h / 24:g}d" if h % 24 == 0 and h else f"{h:g}h"


def draw(plan: Plan, width: int) -> list[Text]:
    """The timeline as lines of text `width` columns wide: one line per card, then an axis."""
    c = plan.campaign
    cols = max(10, width - LABEL_W - 1)
    scale = cols / c.window_hours
    order = {f.config: i for i, f in enumerate(plan.assumptions.figures)}
    shade = Style(color="grey42")
    per_card: list[list[Run]] = [[] for _ in range(c.cards)]
    for run in plan.runs:
        for card in run.card:
            if card < c.cards:
                per_card[card].append(run)
    reserved_to = int(c.usable_from_h * scale)
    usable_to = min(cols, int(c.usable_until_h * scale))
    lines: list[Text] = []
    for card, runs in enumerate(per_card):
        cells = ["░"] * reserved_to + [" "] * (usable_to - reserved_to) + ["░"] * (cols - usable_to)
        styles: list[Style | None] = [shade] * reserved_to + [None] * (usable_to - reserved_to) \
            + [shade] * (cols - usable_to)
        for run in runs:
            a = min(cols - 1, int(run.start_h * scale))
            b = max(a + 1, min(cols, int(run.end_h * scale)))
            index = order.get(run.variant, (run.version or 0) - 1)
            colour = PALETTE[index % len(PALETTE)]
            style = Style(bgcolor=colour, color="black" if index % 2 else "white")
            label = run_label(run)
            text = ("▏" + label)[: b - a] if b - a > 2 else "▏" * (b - a)
            for i in range(a, b):
                cells[i] = text[i - a] if i - a < len(text) else " "
                styles[i] = style
        line = Text(f"c{card:<{LABEL_W - 2}} ", style="bold")
        # One append per run of equal style: per-cell appends cost a span each.
        start = 0
        for i in range(1, cols + 1):
            if i == cols or styles[i] is not styles[start]:
                line.append("".join(cells[start:i]), styles[start])
                start = i
        line.append("┃", "bold red")
        lines.append(line)
    axis = [" "] * (cols + 1)
    step = _step(c.window_hours, cols)
    h = 0.0
    while h < c.window_hours:
        label = _tick(h)
        at = int(h * scale)
        if at + len(label) <= cols - 3:
            axis[at: at + len(label)] = label
        h += step
    end = f"{_tick(c.window_hours)} end"
    axis[cols + 1 - len(end): cols + 1] = end
    lines.append(Text(" " * LABEL_W + "".join(axis), style="grey62"))
    return lines


def run_at(plan: Plan, width: int, x: int, y: int) -> Run | None:
    """The run drawn at column `x` of card line `y`, if any."""
    c = plan.campaign
    cols = max(10, width - LABEL_W - 1)
    if y >= c.cards or x < LABEL_W:
        return None
    hour = (x - LABEL_W + 0.5) * c.window_hours / cols
    for run in plan.runs:
        if y in run.card and run.start_h <= hour < run.end_h:
            return run
    return None


def count(plan: Plan, width: int) -> int:
    """Lines `draw` makes: one per card and the axis."""
    return plan.campaign.cards + 1


class Timeline(Lines):
    """Runs on cards over the window: one line per card and an hour axis."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(draw, count=count, id=id)

    def on_mouse_move(self, event: events.MouseMove) -> None:
        run = run_at(self.plan, self.size.width, event.x, event.y) if self.plan else None
        self.tooltip = (f"{run.id}\nhours {run.start_h:.1f}–{run.end_h:.1f} on card "
                        f"{', '.join(map(str, run.card))}" if run else None)

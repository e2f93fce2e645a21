"""Drawing the per-card timeline: which part of the window is in view (zoom and pan),
each run as a bar labelled `variant·seed` (or its code and seed when the bar is short, the
codes in a legend), the reserved hours shaded and the window's end marked."""

from __future__ import annotations

import math
import string
from dataclasses import dataclass

from rich.style import Style
from rich.text import Text

from planner.planfile.plan import Plan, Run

PALETTE = ("#3b82f6", "#10b981", "#f59e0b", "#8b5cf6", "#ef4444", "#06b6d4", "#84cc16",
           "#ec4899", "#64748b", "#14b8a6")
LABEL_W = 5
"""Columns of the card name at the start of each line."""
MAX_ZOOM = 6
"""Halvings of the visible span: at most 1/64 of the window in view."""
SHADE = Style(color="grey42")
CURSOR = Style(reverse=True, bold=True)


@dataclass(frozen=True)
class View:
    """The part of the window drawn, and the run under the cursor."""

    zoom: int = 0
    """The visible span is the window halved this many times."""
    start_h: float = 0.0
    """Hour at the left edge."""
    cursor: str | None = None
    """Id of the run under the cursor."""

    def span(self, window_h: float) -> float:
        """Hours in view."""
        return window_h / 2 ** self.zoom

    def clamped(self, window_h: float) -> View:
        """The same view, its left edge kept inside the window."""
        zoom = max(0, min(MAX_ZOOM, self.zoom))
        most = window_h - window_h / 2 ** zoom
        return View(zoom, max(0.0, min(most, self.start_h)), self.cursor)

    def zoomed(self, by: int, window_h: float, around_h: float) -> View:
        """Zoomed in (`by` > 0) or out, keeping `around_h` where it was on screen."""
        old = self.span(window_h)
        zoom = max(0, min(MAX_ZOOM, self.zoom + by))
        new = window_h / 2 ** zoom
        at = (around_h - self.start_h) / old if old else 0.0
        return View(zoom, around_h - at * new, self.cursor).clamped(window_h)

    def panned(self, fraction: float, window_h: float) -> View:
        """Moved by a fraction of the visible span (negative: towards the start)."""
        return View(self.zoom, self.start_h + fraction * self.span(window_h),
                    self.cursor).clamped(window_h)

    def showing(self, run: Run, window_h: float) -> View:
        """Panned, if need be, so that `run` starts in view; the cursor on it."""
        span = self.span(window_h)
        start = self.start_h
        if not start <= run.start_h < start + span:
            start = run.start_h - span / 4
        return View(self.zoom, start, run.id).clamped(window_h)


def codes(plan: Plan) -> dict[str, str]:
    """A short code per configuration, in the plan's order: A, B, … Z, AA, AB, …"""
    names = [f.config for f in plan.assumptions.figures]
    for run in plan.runs:
        if run.variant not in names:
            names.append(run.variant)
    letters = string.ascii_uppercase
    out = {}
    for i, name in enumerate(names):
        out[name] = letters[i] if i < 26 else letters[i // 26 - 1] + letters[i % 26]
    return out


def labels(run: Run, code: str) -> tuple[str, ...]:
    """What a bar may show, longest first: `variant·seed`, then the code and the seed."""
    if run.kind == "embed":
        return (f"{run.variant}·{run.shard}",)
    if run.kind == "robustness":
        return (f"{run.variant}·{run.seed}·eval", f"{code}·{run.seed}e", f"{code}e")
    return (f"{run.variant}·{run.seed}", f"{code}·{run.seed}", code)


def legend(plan: Plan) -> str:
    """The codes of short bars: `A=baseline  B=alibi …`."""
    if plan.embedding is not None:
        return ""
    # No space inside an entry: a code and its name stay on one line when it wraps.
    return "  ".join(f"{code}={name}" for name, code in codes(plan).items())


def per_card(plan: Plan) -> list[list[Run]]:
    """Each card's runs, by start."""
    cards: list[list[Run]] = [[] for _ in range(plan.campaign.cards)]
    for run in plan.runs:
        for card in run.card:
            if card < len(cards):
                cards[card].append(run)
    for runs in cards:
        runs.sort(key=lambda r: r.start_h)
    return cards


def columns(width: int) -> int:
    """Columns of the time axis at `width`."""
    return max(10, width - LABEL_W - 1)


def draw(plan: Plan, width: int, view: View = View()) -> tuple[list[Text], bool]:
    """(lines, whether a code was used): one line per card, then the hour axis."""
    c = plan.campaign
    window = c.window_hours
    view = view.clamped(window)
    cols = columns(width)
    span = view.span(window)
    scale = cols / span

    def x(h: float) -> int:
        return int((h - view.start_h) * scale)

    order = {f.config: i for i, f in enumerate(plan.assumptions.figures)}
    code = codes(plan)
    # Reserved hours are drawn even when narrower than a column: at least one cell.
    reserved_to = max(0, min(cols, math.ceil((c.usable_from_h - view.start_h) * scale)))
    end_at = x(window)
    usable_to = min(cols, x(c.usable_until_h))
    if c.usable_until_h < window and 0 < end_at <= cols:
        usable_to = min(usable_to, end_at - 1)  # the margin before the end, in sight
    usable_to = max(reserved_to, usable_to)
    used_code = False
    lines: list[Text] = []
    for card, runs in enumerate(per_card(plan)):
        cells = (["░"] * reserved_to + [" "] * (usable_to - reserved_to)
                 + ["░"] * (cols - usable_to))
        styles: list[Style | None] = ([SHADE] * reserved_to + [None] * (usable_to - reserved_to)
                                      + [SHADE] * (cols - usable_to))
        for run in runs:
            if run.end_h <= view.start_h or run.start_h >= view.start_h + span:
                continue
            # A run never hides the reserved hours' cell it starts in.
            a = max(reserved_to if run.start_h >= c.usable_from_h else 0,
                    min(cols - 1, x(run.start_h)))
            b = max(a + 1, min(cols, x(run.end_h)))
            index = order.get(run.variant, (run.version or 0) - 1)
            colour = PALETTE[index % len(PALETTE)]
            style = (CURSOR if run.id == view.cursor else
                     Style(bgcolor=colour, color="black" if index % 2 else "white"))
            text = "▏" * (b - a)
            for i, label in enumerate(labels(run, code.get(run.variant, "?"))):
                if len(label) + 1 <= b - a:
                    text = "▏" + label
                    used_code = used_code or i > 0
                    break
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
        line.append("┃" if end_at <= cols else "›", "bold red")
        lines.append(line)
    lines.append(_axis(view, window, cols, scale))
    return lines, used_code


def _step(span_h: float, cols: int) -> float:
    for step in (1, 2, 3, 6, 12, 24, 48, 72, 120, 168, 240, 336, 720):
        if cols * step / span_h >= 8:
            return float(step)
    return span_h


def _tick(h: float, day: bool) -> str:
    return f"{h / 24:g}d" if day else f"{h:g}h"


def _axis(view: View, window: float, cols: int, scale: float) -> Text:
    axis = [" "] * (cols + 1)
    span = view.span(window)
    step = _step(span, cols)
    first = math.ceil(view.start_h / step) * step
    ticks = [first + i * step for i in range(math.ceil((view.start_h + span - first) / step))]
    bounds = [window] if view.zoom == 0 else [round(view.start_h),
                                              round(view.start_h + span), window]
    # One unit for the whole axis: days only when every hour it names is a whole day,
    # so `36h` never stands beside `2d`.
    day = all(h % 24 == 0 for h in (*ticks, *bounds))
    end = (f"{_tick(window, day)} end" if view.zoom == 0 else
           f"{_tick(bounds[0], day)}–{_tick(bounds[1], day)} of {_tick(window, day)}")
    for h in ticks:
        label = _tick(h, day)
        at = int((h - view.start_h) * scale)
        if at + len(label) < cols - len(end):
            axis[at: at + len(label)] = label
    axis[cols + 1 - len(end): cols + 1] = end
    return Text(" " * LABEL_W + "".join(axis), style="grey62")


def run_at(plan: Plan, width: int, x: int, y: int, view: View = View()) -> Run | None:
    """The run drawn at column `x` of card line `y`, if any."""
    c = plan.campaign
    if y >= c.cards or x < LABEL_W:
        return None
    view = view.clamped(c.window_hours)
    hour = view.start_h + (x - LABEL_W + 0.5) * view.span(c.window_hours) / columns(width)
    for run in plan.runs:
        if y in run.card and run.start_h <= hour < run.end_h:
            return run
    return None


def describe(plan: Plan, run: Run) -> str:
    """A run's id, place, start, end and figures, in one line."""
    figs = {f.config: f for f in plan.assumptions.figures}.get(run.variant)
    parts = [run.id, f"card {', '.join(map(str, run.card))}",
             f"hours {run.start_h:.1f}–{run.end_h:.1f} ({run.end_h - run.start_h:.1f} h)"]
    if run.steps:
        parts.append(f"{run.steps:,} steps")
    parts.append(f"micro-batch {run.micro_batch}×{run.accumulation}")
    if figs is not None:
        parts.append(f"step {figs.step_time_s.value:.3g} s, peak "
                     f"{figs.peak_memory_gib.value:.3g} GiB ({figs.step_time_s.label()})")
    if run.depends_on:
        parts.append(f"after {run.depends_on}")
    return " · ".join(parts)

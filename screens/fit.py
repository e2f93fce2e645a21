"""Fit screen, live: what fits in the window, on which card and when, against what memory,
what does not and why, and where every figure comes from."""

from __future__ import annotations

from collections import Counter
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Label, Static

from planner.planfile.plan import Plan
from planner.planning.render import estimate_line, measured_line, room_lines
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.text import cost, hours, runs_fit
from screens.widgets.gantt import Timeline
from screens.widgets.gantt_draw import describe, legend
from screens.widgets.matrix import MatrixTable
from screens.widgets.membar import MemoryBars

LISTED = 12
"""Items of a list shown before `… and N more`: the rest are in plan.toml."""


def figures(plan: Plan) -> str:
    """The headline figures, a line each."""
    c, s = plan.campaign, plan.summary
    lines = [
        f"{runs_fit(plan)} in {c.window_hours:g} h × {c.cards} {c.card_name}",
        f"usable hours {c.usable_from_h:g}–{c.usable_until_h:g}: {hours(c.usable_hours)} per "
        f"card · last run ends at hour {s.makespan_h:.1f}",
        f"utilization {s.utilization:.1%} · {s.idle_card_hours:,.1f} idle card-hours",
    ]
    if plan.embedding is not None:
        e = plan.embedding
        lines.append(f"{e.documents:,} documents per version ({e.lengths_source} lengths); "
                     f"{e.documents_fit_first_version:,} of the first version fit")
        lines.append(f"fixed: {e.model}, truncation {e.truncation_tokens}, {e.pooling} "
                     f"pooling, {e.normalization} normalization")
    elif s.first_complete_seed is not None and s.first_complete_seed_end_h is not None:
        lines.append(f"seed {s.first_complete_seed}'s whole matrix completes at hour "
                     f"{s.first_complete_seed_end_h:.1f}")
    else:
        lines.append("no seed's whole matrix completes in the window")
    lines += [line.removeprefix("Room      ").strip() for line in room_lines(plan)]
    lines.append(cost(plan))
    lines += [text for text in (measured_line(plan), estimate_line(plan)) if text]
    lines += [f"override: {text}" for text in plan.assumptions.overrides]
    return "\n".join(lines)


def listing(items: list[str]) -> str:
    """Bulleted items, the long tail counted."""
    if not items:
        return "none"
    shown = [f"• {i}" for i in items[:LISTED]]
    if len(items) > LISTED:
        shown.append(f"… and {len(items) - LISTED} more (see plan.toml)")
    return "\n".join(shown)


def provenance(plan: Plan) -> str:
    """Where the figures come from: counts by source, then every note (the per-figure
    source is in the table and beside each memory bar)."""
    a = plan.assumptions
    lines = []
    for what, figs in (("step time", [f.step_time_s for f in a.figures]),
                       ("peak memory", [f.peak_memory_gib for f in a.figures])):
        if figs:
            labels = Counter(f.label() for f in figs)
            lines.append(f"{what}: " + ", ".join(f"{n} {label}" for label, n in
                                                  labels.most_common()))
    if a.throughput_tokens_per_s is not None:
        t = a.throughput_tokens_per_s
        span = f" ({t.low:,.0f}–{t.high:,.0f})" if t.low and t.high else ""
        lines.append(f"throughput {t.value:,.0f} tokens/s per card{span}: {t.label()}")
    notes = [f"{f.config} {what}: {fig.note}" for f in a.figures
             for what, fig in (("step time", f.step_time_s), ("peak memory", f.peak_memory_gib))
             if fig.note]
    if a.throughput_tokens_per_s is not None and a.throughput_tokens_per_s.note:
        notes.append(f"throughput: {a.throughput_tokens_per_s.note}")
    if notes:
        lines.append(listing(notes))
    o = a.overheads
    lines.append(f"overheads as entered: stack check {o.stack_check_hours:g} h, safety margin "
                 f"{o.safety_margin_hours:g} h, startup {o.startup_minutes:g} min/run, "
                 f"memory margin {o.memory_margin_gib:g} GiB")
    return "\n".join(lines)



class FiguresText(Static):
    """The plan's headline figures."""


class FitScreen(PlannerScreen):
    """What fits, live."""

    MODE = "fit"
    AUTO_FOCUS = "#fit"
    BINDINGS: ClassVar = [
        Binding("t", "jump('timeline')", "Timeline"),
        Binding("m", "jump('memory')", "Memory"),
        Binding("n", "jump('missing')", "Not fitting"),
        Binding("f", "app.fill_capacity", "Fill to capacity"),
        Binding("home", "jump('top')", "Top", show=False),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._shown: dict[str, str] = {}

    def body(self) -> ComposeResult:
        with VerticalScroll(id="fit"):
            yield FiguresText("", id="top", classes="figures")
            yield Label("Variant × seed: ✓ completes in the window, ✗ does not",
                        classes="section", id="matrix-title")
            yield MatrixTable(id="matrix")
            yield Label("Timeline: runs on each card; ░ reserved hours; ┃ the window's end",
                        classes="section", id="timeline-title")
            yield Timeline(id="timeline")
            yield Static("", id="timeline-legend", classes="hint", markup=False)
            yield Static("", id="timeline-cursor", markup=False)
            yield Label("Memory: peak per configuration against the card", classes="section",
                        id="memory")
            yield MemoryBars(id="bars")
            yield Label("Does not fit, and why", classes="section", id="missing")
            yield Static("", id="missing-list", markup=False)
            yield Label("Decisions the planner made", classes="section")
            yield Static("", id="decisions", markup=False)
            yield Label("Warnings", classes="section")
            yield Static("", id="warnings", markup=False)
            yield Label("Provenance of each figure", classes="section")
            yield Static("", id="provenance", markup=False)

    def show(self, ws: Workspace) -> None:
        plan = ws.plan
        self._text("#top", figures(plan))
        self._table(plan)
        timeline = self.query_one(Timeline)
        timeline.show(plan)
        self._text("#timeline-legend", legend(plan))
        # In the same frame as the plan, not a message later: one frame per edit.
        self._cursor(timeline)
        # An embedding campaign has no configurations, so no memory bars: no section.
        bars = bool(plan.assumptions.figures)
        if self.query_one(MemoryBars).display != bars:
            self.query_one("#memory").display = bars
            self.query_one(MemoryBars).display = bars
            self.refresh_bindings()
        if bars:
            self.query_one(MemoryBars).show(plan)
        self._text("#missing-list", listing([f"{n.id}: {n.reason}" for n in plan.not_fitting]))
        self._text("#decisions", listing(plan.decisions))
        self._text("#warnings", listing(plan.warnings))
        self._text("#provenance", provenance(plan))

    def _text(self, selector: str, text: str) -> None:
        # Updating a Static reflows the screen: skip the ones whose text is unchanged.
        widget = self.query_one(selector, Static)
        if self._shown.get(selector) != text:
            self._shown[selector] = text
            widget.update(Text(text))

    def _table(self, plan: Plan) -> None:
        title = ("Batching: ● the strategy planned" if plan.embedding is not None else
                 "Variant × seed: ✓ completes in the window, ✗ does not")
        # A label's update lays the screen out again: only when its words change.
        if self._shown.get("#matrix-title") != title:
            self._shown["#matrix-title"] = title
            self.query_one("#matrix-title", Label).update(title)
        self.query_one(MatrixTable).show(plan)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # No memory bars (an embedding campaign): no key to jump to them.
        if action == "jump" and parameters == ("memory",):
            return bool(self.planner.workspace.plan.assumptions.figures)
        return True

    def action_jump(self, where: str) -> None:
        """Scroll to a section (the timeline takes the focus, for its keys)."""
        if where == "timeline":
            self.query_one("#timeline-title").scroll_visible(top=True, animate=False)
            self.query_one(Timeline).focus(scroll_visible=False)
            return
        self.query_one(f"#{where}").scroll_visible(top=True, animate=False)

    def on_timeline_moved(self, message: Timeline.Moved) -> None:
        self._cursor(message.timeline)

    def _cursor(self, timeline: Timeline) -> None:
        """The run under the timeline's cursor, and the timeline's keys."""
        run = timeline.cursor_run()
        keys = ("+/− zoom · [ ] pan · ←→ runs · ↑↓ cards · 0 whole window"
                if timeline.has_focus else "t: zoom, pan and a cursor on the runs")
        self._text("#timeline-cursor", (describe(timeline.plan, run) + "\n"
                                        if run and timeline.plan else "") + keys)

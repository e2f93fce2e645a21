"""The zoomable Gantt of the cards, drawn with plotly (imported by the caller's functions
only: `planner.report` is the one place that needs it)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from planner.planfile.plan import Plan
from planner.report.bars import Bar, bars, groups, hours, markup_safe, provenance
from planner.report.palette import colour_of

if TYPE_CHECKING:
    from planner.report.actual import Actual

BAR_WIDTH = 0.7
"""Planned bars take this share of a card's row; actual ones a strip below them."""
LEGEND_GROUPS = 20
"""Up to this many variants each get a trace and a legend entry; past it a legend says
little and every trace costs the browser time, so all bars share one trace (per kind),
coloured bar by bar, the variant named in each bar's hover."""


def card_names(plan: Plan) -> list[str]:
    """The Gantt's rows, one per rented card."""
    return [f"card {i}" for i in range(plan.campaign.cards)]


def gantt(plan: Plan, actual: Actual | None = None) -> Any:
    """A plotly figure: runs as bars on the cards, coloured by variant, evaluations tied
    to the run they evaluate, reserved hours shaded, the usable window's end marked, and
    with a journal what actually ran and the hour it is now."""
    import plotly.graph_objects as go

    fig = go.Figure()
    names = card_names(plan)
    colours = colour_of(groups(plan))
    every = bars(plan)
    per_group = len(colours) <= LEGEND_GROUPS
    for g in groups(plan) if per_group else [None]:
        for evaluation in (False, True):
            mine = [b for b in every if (g is None or b.group == g)
                    and (b.kind == "robustness") == evaluation]
            if mine:
                fig.add_trace(_trace(plan, g, mine, colours, names, evaluation))
    _links(fig, plan, every, names)
    _window(fig, plan)
    if actual is not None:
        actual.draw(fig, names)
    c = plan.campaign
    fig.update_layout(
        barmode="overlay", template="plotly_white", height=max(320, 90 + 34 * c.cards),
        margin={"l": 70, "r": 20, "t": 40, "b": 40}, legend={"orientation": "h", "y": 1.02,
                                                             "yanchor": "bottom", "x": 0},
        hoverlabel={"align": "left"}, dragmode="zoom",
        xaxis={"title": "hours from the window's start", "range": [0, c.window_hours],
               "dtick": _dtick(c.window_hours), "showgrid": True, "zeroline": False},
        yaxis={"categoryorder": "array", "categoryarray": names, "autorange": "reversed",
               "fixedrange": False},
    )
    return fig


def _dtick(window_h: float) -> float:
    for step in (1, 2, 6, 12, 24, 48, 168):
        if window_h / step <= 32:
            return step
    return 24 * 7 * max(1, round(window_h / (24 * 7 * 30)))


def _trace(plan: Plan, group: str | None, mine: list[Bar], colours: dict[str, str],
           names: list[str], evaluation: bool) -> Any:
    """The bars of one variant (or, with `group` None, of every variant)."""
    import plotly.graph_objects as go

    runs = {r.id: r for r in plan.runs}
    said = {g: "".join(f"<br>{markup_safe(p)}" for p in provenance(plan, g))
            for g in ([group] if group is not None else colours)}
    data = []
    for b in mine:
        r = runs[b.run]
        data.append([b.run, hours(b.start_h), hours(b.end_h), r.steps,
                     f"{r.micro_batch} × {r.accumulation}" if r.micro_batch else "—",
                     f"<br>evaluates {b.parent}" if b.parent else "",
                     "" if group is not None else f"<br>{markup_safe(b.group)}{said[b.group]}"])
    lines = said[group] if group is not None else "%{customdata[6]}"
    name = group if group is not None else ("evaluations" if evaluation else "runs")
    colour: str | list[str] = colours[group] if group is not None else \
        [colours[b.group] for b in mine]
    return go.Bar(
        orientation="h", name=markup_safe(name), legendgroup=name,
        showlegend=group is not None and not evaluation,
        base=[b.start_h for b in mine], x=[b.end_h - b.start_h for b in mine],
        y=[names[b.card] for b in mine], text=[markup_safe(b.label) for b in mine],
        textposition="inside", insidetextanchor="middle", constraintext="inside",
        textfont={"color": "white"}, width=BAR_WIDTH, customdata=data,
        marker={"color": colour, "line": {"color": "white", "width": 0.5},
                "pattern": {"shape": "/" if evaluation else "", "fgcolor": "white",
                            "size": 6, "solidity": 0.25}},
        hovertemplate=("<b>%{customdata[0]}</b><br>start %{customdata[1]}<br>end "
                       "%{customdata[2]}<br>steps %{customdata[3]:,}<br>micro-batch × "
                       "accumulation %{customdata[4]}%{customdata[5]}" + lines
                       + "<extra>" + markup_safe(name) + ("" if not evaluation else " eval")
                       + "</extra>"),
    )


def _links(fig: Any, plan: Plan, every: list[Bar], names: list[str]) -> None:
    """A thin line from each evaluated run's end to its evaluation: the two belong together
    even when the evaluation lands on another card."""
    import plotly.graph_objects as go

    ends = {b.run: b for b in every if b.kind != "robustness"}
    xs: list[float | None] = []
    ys: list[str | None] = []
    for b in every:
        parent = ends.get(b.parent)
        if parent is None:
            continue
        xs += [parent.end_h, b.start_h, None]
        ys += [names[parent.card], names[b.card], None]
    if xs:
        fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name="evaluation of",
                                 line={"color": "rgba(60,60,60,0.22)", "width": 1, "dash": "dot"},
                                 hoverinfo="skip", showlegend=False))


def _window(fig: Any, plan: Plan) -> None:
    c = plan.campaign
    grey = "rgba(120,120,120,0.18)"
    if c.usable_from_h > 0:
        fig.add_vrect(x0=0, x1=c.usable_from_h, fillcolor=grey, line_width=0, layer="below")
    if c.usable_until_h < c.window_hours:
        fig.add_vrect(x0=c.usable_until_h, x1=c.window_hours, fillcolor=grey, line_width=0,
                      layer="below")
    fig.add_vline(x=c.usable_until_h, line={"color": "#c0392b", "width": 2, "dash": "dash"},
                  annotation_text=f"runs end by h {c.usable_until_h:g}",
                  annotation_position="bottom left", annotation_font_color="#c0392b")

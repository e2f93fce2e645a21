"""The report's smaller charts: memory per variant, card-hours, and an embedding campaign's
shards over time and padding. Each returns a plotly figure, or None when the plan has
nothing to show in it."""

from __future__ import annotations

from typing import Any

from planner.planfile.plan import Plan
from planner.report.bars import groups, markup_safe
from planner.report.palette import colour_of

LAYOUT: dict[str, Any] = {"template": "plotly_white",
                          "margin": {"l": 110, "r": 20, "t": 40, "b": 40}}


def memory(plan: Plan) -> Any | None:
    """Each configuration's planned peak against the card's memory budget; a reduced
    micro-batch is marked with the peak it would have had and the micro-batch × accumulation
    planned instead."""
    figs = plan.assumptions.figures
    if not figs:
        return None
    import plotly.graph_objects as go

    a = plan.assumptions
    colours = colour_of(groups(plan))
    base_mb = figs[0].micro_batch
    fig = go.Figure()
    fig.add_trace(go.Bar(
        orientation="h", y=[markup_safe(f.config) for f in figs],
        x=[f.planned_peak_gib for f in figs],
        marker={"color": [colours.get(f.config, "#888") for f in figs]}, name="planned peak",
        text=[f"{f.planned_peak_gib:.1f} GiB · mb {f.micro_batch} × {f.accumulation}"
              + ("" if f.fits else " · does not fit") for f in figs],
        textposition="auto", hovertemplate="%{y}: %{x:.1f} GiB planned<extra></extra>"))
    reduced = [f for f in figs if f.micro_batch != base_mb
               or f.planned_peak_gib < f.peak_memory_gib.value - 1e-9]
    if reduced:
        fig.add_trace(go.Scatter(
            x=[f.peak_memory_gib.value for f in reduced],
            y=[markup_safe(f.config) for f in reduced],
            mode="markers+text", marker={"symbol": "x", "size": 11, "color": "#c0392b"},
            text=[f"{f.peak_memory_gib.value:.1f} GiB at mb {base_mb}: reduced" for f in reduced],
            textposition="middle right", name="peak before the reduction",
            hovertemplate="%{y}: %{x:.1f} GiB at the workload's micro-batch<extra></extra>"))
    fig.add_vline(x=a.memory_budget_gib, line={"color": "#c0392b", "dash": "dash"},
                  annotation_text=f"budget {a.memory_budget_gib:.1f} GiB",
                  annotation_position="top left")
    fig.add_vline(x=a.card_memory_gib, line={"color": "#555", "dash": "dot"},
                  annotation_text=f"card {a.card_memory_gib:g} GiB",
                  annotation_position="bottom right")
    top = max([a.card_memory_gib, *(f.peak_memory_gib.value for f in figs)])
    fig.update_layout(**LAYOUT, height=120 + 34 * len(figs), showlegend=bool(reduced),
                      xaxis={"title": "GiB", "range": [0, top * 1.35]},
                      yaxis={"autorange": "reversed"})
    return fig


def hours(plan: Plan) -> Any:
    """Card-hours bought, split into busy, idle and reserved."""
    import plotly.graph_objects as go

    s = plan.summary
    reserved = s.card_hours_bought - s.usable_card_hours
    parts = [("busy", s.busy_card_hours, "#2c7fb8"), ("idle", s.idle_card_hours, "#a6bddb"),
             ("reserved", reserved, "#bbbbbb")]
    fig = go.Figure()
    for name, value, colour in parts:
        share = value / s.card_hours_bought if s.card_hours_bought else 0.0
        fig.add_trace(go.Bar(orientation="h", y=["card-hours"], x=[value], name=name,
                             marker={"color": colour}, text=[f"{name} {value:,.0f} ({share:.0%})"],
                             textposition="inside", insidetextanchor="middle",
                             hovertemplate=f"{name}: %{{x:,.1f}} card-hours<extra></extra>"))
    fig.update_layout(**LAYOUT, barmode="stack", height=190,
                      xaxis={"title": f"card-hours ({s.card_hours_bought:,.0f} bought)"},
                      legend={"orientation": "h", "y": 1.15, "traceorder": "normal"})
    return fig


def padding(plan: Plan) -> Any | None:
    """Useful and padding tokens per version, original order against length-grouped."""
    e = plan.embedding
    if e is None or not e.strategies:
        return None
    import plotly.graph_objects as go

    names = [f"{s.strategy}{' (planned)' if s.strategy == e.batching else ''}"
             for s in e.strategies]
    fig = go.Figure()
    fig.add_trace(go.Bar(orientation="h", y=names, x=[s.useful_tokens for s in e.strategies],
                         name="useful tokens", marker={"color": "#2c7fb8"},
                         hovertemplate="%{y}: %{x:,} useful tokens<extra></extra>"))
    fig.add_trace(go.Bar(
        orientation="h", y=names, x=[s.padded_tokens - s.useful_tokens for s in e.strategies],
        name="padding", marker={"color": "#fdae6b"},
        text=[f"{s.padding_fraction:.1%} padding · {s.hours_per_version:,.1f} h per version"
              for s in e.strategies], textposition="outside",
        hovertemplate="%{y}: %{x:,} padding tokens<extra></extra>"))
    top = max(s.padded_tokens for s in e.strategies)
    fig.update_layout(**LAYOUT, barmode="stack", height=220,
                      xaxis={"title": "tokens per version", "range": [0, top * 1.45]},
                      legend={"orientation": "h", "y": 1.2, "traceorder": "normal"})
    return fig


def shards(plan: Plan) -> Any | None:
    """Shards exported over time on each card: each part writes its shards evenly from its
    start to its end."""
    e = plan.embedding
    embeds = [r for r in plan.runs if r.kind == "embed"]
    if e is None or not embeds:
        return None
    import plotly.graph_objects as go

    per_version = max(e.shards, 1)
    parts = max((r.shard or 0) for r in embeds) + 1
    counted = {p.part: p.shards for p in e.corpus.parts} if e.corpus else {}
    fig = go.Figure()
    for card in range(plan.campaign.cards):
        xs, ys, done = [0.0], [0], 0
        for r in sorted((r for r in embeds if card in r.card), key=lambda r: r.start_h):
            k = r.shard or 0
            mine = counted.get(k, len(range(k, per_version, parts)))
            xs += [r.start_h, r.end_h]
            ys += [done, done + mine]
            done += mine
        if len(xs) > 1:
            xs.append(plan.campaign.window_hours)
            ys.append(done)
            # Stacked: the top line is every shard exported so far, each band one card's.
            fig.add_trace(go.Scatter(x=xs, y=ys, mode="lines", name=f"card {card}",
                                     stackgroup="cards", stackgaps="interpolate",
                                     hovertemplate=f"card {card}: %{{y:,}} shards by h "
                                                   "%{x:.1f}<extra></extra>"))
    fig.add_vline(x=plan.campaign.usable_until_h, line={"color": "#c0392b", "dash": "dash"})
    fig.update_layout(**LAYOUT, height=300,
                      xaxis={"title": "hours from the window's start",
                             "range": [0, plan.campaign.window_hours]},
                      yaxis={"title": f"shards exported (of {per_version:,} per version)"},
                      legend={"traceorder": "normal"})
    return fig

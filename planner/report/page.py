"""The report as one HTML page: plotly's JavaScript embedded once, every chart after it,
and the plan's figures and lists as plain HTML. Nothing is fetched when it opens."""

from __future__ import annotations

from html import escape
from typing import Any

from planner.planfile.plan import Plan
from planner.report import charts
from planner.report.actual import Actual
from planner.report.gantt import gantt

CONFIG = {"displaylogo": False, "responsive": True, "scrollZoom": True,
          "modeBarButtonsToRemove": ["select2d", "lasso2d"]}
"""Plotly's options: no link out of the page (its logo), zoom with the wheel too."""

STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:1800px;padding:12px 24px;color:#222}
h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.1em;margin:1.2em 0 .3em;border-bottom:1px solid
#ddd}.facts{display:flex;flex-wrap:wrap;gap:6px 28px;margin:.4em 0}.facts div span{color:#666}
table{border-collapse:collapse;font-size:.9em}td,th{padding:2px 10px;border-bottom:1px solid
#eee;text-align:left}td.n{text-align:right}.muted{color:#666}ul{margin:.2em 0}
"""


def money(value: float, currency: str) -> str:
    """An amount in the plan's currency."""
    return f"{value:,.2f} {currency}"


def facts(plan: Plan) -> list[tuple[str, str]]:
    """The headline figures, as label and value."""
    c, s = plan.campaign, plan.summary
    out = [("Rental", f"{c.cards} × {c.card_name} for {c.window_hours:g} h"),
           ("Usable", f"hours {c.usable_from_h:g}–{c.usable_until_h:g}"),
           ("Runs that fit", f"{s.runs_scheduled} of {s.runs_total}"),
           ("Utilization", f"{s.utilization:.1%} of usable card-hours"),
           ("Last run ends", f"hour {s.makespan_h:.1f}")]
    if s.matrix_runs:
        out.insert(3, ("Matrix runs", f"{s.matrix_runs_fit} of {s.matrix_runs}"))
    if s.cost_total is not None:
        out.append(("Cost", money(s.cost_total, c.currency)))
    return out


def _facts_html(items: list[tuple[str, str]]) -> str:
    return "<div class=facts>" + "".join(
        f"<div><span>{escape(k)}</span> {escape(v)}</div>" for k, v in items) + "</div>"


def _table(head: list[str], rows: list[list[str]], numeric: set[int] | None = None) -> str:
    numeric = numeric or set()
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(
        f"<td{' class=n' if i in numeric else ''}>{escape(v)}</td>" for i, v in enumerate(r))
        + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


def _money_html(plan: Plan) -> str:
    c, s = plan.campaign, plan.summary
    rows = [["bought", f"{s.card_hours_bought:,.1f}"], ["busy", f"{s.busy_card_hours:,.1f}"],
            ["idle", f"{s.idle_card_hours:,.1f}"],
            ["reserved", f"{s.card_hours_bought - s.usable_card_hours:,.1f}"]]
    text = _table(["card-hours", ""], rows, {1})
    if s.cost_total is not None and c.price_per_card_hour is not None:
        per = (f"; {money(s.cost_per_matrix_run, c.currency)} per training run that fits"
               if s.cost_per_matrix_run is not None else "")
        text += (f"<p>Cost {escape(money(s.cost_total, c.currency))} at "
                 f"{escape(money(c.price_per_card_hour, c.currency))} per card-hour"
                 f"{escape(per)}.</p>")
    else:
        text += ("<p class=muted>Cost unknown: the plan has no price per card-hour "
                 "(campaign.price_per_card_hour, or a price in your catalog).</p>")
    return text + _capacity_html(plan)


def _capacity_html(plan: Plan) -> str:
    """How much fits, when the plan carries it."""
    capacity = getattr(plan.summary, "capacity", None)
    if capacity is None:
        return ""
    data = capacity.model_dump(mode="json") if hasattr(capacity, "model_dump") else capacity
    if isinstance(data, dict):
        rows = [[str(k).replace("_", " "), _plain(v)] for k, v in data.items() if v is not None]
        body = _table(["", ""], rows)
    else:
        body = f"<p>{escape(_plain(data))}</p>"
    return "<h3>How much fits</h3>" + body


def _plain(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:,.4g}"
    if isinstance(value, list):
        return ", ".join(_plain(v) for v in value)
    if isinstance(value, dict):
        return "; ".join(f"{k} {_plain(v)}" for k, v in value.items())
    return str(value)


def _actual_html(actual: Actual) -> str:
    s = actual.status
    counts = " · ".join(f"{n} {g}" for g, n in s["counts"].items())
    head = [("Runs", counts), ("Now", f"hour {s['now_h']:.1f}" if s["started"]
                               else "not started")]
    if s["started"]:
        head += [("Pace", f"{s['pace']:.2f}× planned"),
                 ("Projected end", f"hour {s['projected_end_h']:.1f} "
                                   f"(planned {s['planned_end_h']:.1f})")]
    if s["no_longer_fit"]:
        head.append(("No longer fit", str(len(s["no_longer_fit"]))))

    def h(v: float | None) -> str:
        return "—" if v is None else f"{v:.1f}"

    def span(a: float | None, b: float | None) -> str:
        return "—" if a is None and b is None else f"{h(a)}–{h(b)}"

    rows = [[r["id"], r["state"], span(r["planned_start_h"], r["planned_end_h"]),
             span(r["actual_start_h"], r["actual_end_h"]),
             h(r["planned_s"] / 3600), h(r["actual_s"] / 3600) if r["actual_s"] else "—",
             h(r["projected_end_h"])] for r in s["runs"]]
    return _facts_html(head) + _table(
        ["run", "state", "planned h", "actual h", "planned hours", "actual hours",
         "projected end"], rows, {4, 5, 6})


def _lists(plan: Plan) -> str:
    out = ""
    if plan.not_fitting:
        out += "<h2>What does not fit, and why</h2>" + _table(
            ["run", "why"], [[n.id, n.reason] for n in plan.not_fitting])
    else:
        out += "<h2>What does not fit</h2><p>Every run of the campaign fits the window.</p>"
    for title, items in (("Decisions", plan.decisions), ("Warnings", plan.warnings)):
        if items:
            out += f"<h2>{title}</h2><ul>" + "".join(
                f"<li>{escape(i)}</li>" for i in items) + "</ul>"
    return out


def report_html(plan: Plan, actual: Actual | None = None) -> str:
    """The whole report; the same plan and journal always give the same bytes."""
    c = plan.campaign
    reserved = [f"the stack check (0–{c.usable_from_h:g})" if c.usable_from_h > 0 else "",
                f"the safety margin ({c.usable_until_h:g}–{c.window_hours:g})"
                if c.usable_until_h < c.window_hours else ""]
    said = " and ".join(r for r in reserved if r)
    notes = [f"shaded: the hours reserved for {said}" if said else "",
             "hatched: robustness evaluations, a dotted line to the run each evaluates"
             if any(r.kind == "robustness" for r in plan.runs) else ""]
    caption = "; ".join(n for n in notes if n)
    caption = f"<p class=muted>{escape(caption[:1].upper() + caption[1:])}.</p>" if caption else ""
    sections: list[tuple[str, Any, str]] = [("Schedule", gantt(plan, actual), caption)]
    if actual is not None:
        sections.append(("Actual against planned", None, _actual_html(actual)))
    sections.append(("Memory", charts.memory(plan), ""))
    sections.append(("Hours and money", charts.hours(plan), _money_html(plan)))
    if plan.embedding is not None:
        sections.append(("Shards on the cards", charts.shards(plan), ""))
        sections.append(("Padding: original order against length-grouped",
                         charts.padding(plan), ""))
    body, first = [], True
    for n, (title, fig, extra) in enumerate(sections):
        if fig is None and not extra:
            continue
        body.append(f"<h2>{escape(title)}</h2>")
        if fig is not None:
            body.append(fig.to_html(full_html=False, include_plotlyjs=first, config=CONFIG,
                                    div_id=f"chart-{n}", default_width="100%"))
            first = False
        body.append(extra)
    title = f"{c.name} · {c.kind} campaign · plan id {c.id}"
    return ("<!DOCTYPE html>\n<html lang=en><head><meta charset=utf-8>"
            "<meta name=viewport content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)}</title><style>{STYLE}</style></head><body>"
            f"<h1>{escape(title)}</h1><p class=muted>Planned {escape(c.created)}; times are "
            "hours from the window's start. Drag to zoom, double-click to reset, hover a bar "
            "for its figures.</p>" + _facts_html(facts(plan)) + "".join(body) + _lists(plan)
            + "</body></html>\n")

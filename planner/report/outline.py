"""What a plan's report will hold, in words: the preview shown before it is written."""

from __future__ import annotations

from planner.planfile.plan import Plan


def outline(plan: Plan) -> str:
    """The sections of the plan's report.html, one line each."""
    c, s = plan.campaign, plan.summary
    lines = ["report.html: the plan as one page that opens offline in a browser (plotly's "
             "JavaScript is inside it).", "",
             f"Schedule   {s.runs_scheduled} runs on {c.cards} cards, zoomable, coloured by "
             "variant; hover a bar for its figures and their provenance",
             f"           reserved hours shaded; runs end by hour {c.usable_until_h:g}"]
    if plan.assumptions.figures:
        lines.append(f"Memory     {len(plan.assumptions.figures)} configurations against the "
                     f"{plan.assumptions.memory_budget_gib:.1f} GiB budget")
    cost = "" if s.cost_total is None else f"; cost {s.cost_total:,.2f} {c.currency}"
    lines.append(f"Hours      {s.busy_card_hours:,.0f} busy, {s.idle_card_hours:,.0f} idle, "
                 f"{s.card_hours_bought - s.usable_card_hours:,.0f} reserved card-hours{cost}")
    if plan.embedding is not None:
        lines.append("Embedding  shards on the cards over time; padding of original order "
                     "against length-grouped")
    lines.append(f"Not fit    {len(plan.not_fitting)} runs, each with its reason"
                 if plan.not_fitting else "Not fit    every run fits")
    lines += ["", "Press r to write it beside plan.toml and order.toml; "
              "`campaign-planner report PLAN --workdir DIR` adds what actually ran."]
    return "\n".join(lines)

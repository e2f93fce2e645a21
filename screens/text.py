"""Plan figures in words for the screens: formatting only, no planning and no Textual."""

from __future__ import annotations

from planner.planfile.plan import Plan
from planner.planning.render import fit_words, gib, hours, measured_line, window
from planner.spec.catalog import Card

__all__ = ["card_line", "cost", "gib", "headline", "hours", "money", "runs_fit", "window"]


def money(plan: Plan, x: float) -> str:
    """An amount in the plan's currency."""
    return f"{x:,.2f} {plan.campaign.currency}"


def cost(plan: Plan) -> str:
    """Cost of the window, or why it is unknown."""
    s, c = plan.summary, plan.campaign
    if s.cost_total is None or c.price_per_card_hour is None:
        return "cost unknown (no price)"
    per = (f", {money(plan, s.cost_per_matrix_run)} per completed run"
           if s.cost_per_matrix_run is not None else "")
    return (f"cost {money(plan, s.cost_total)} ({money(plan, c.price_per_card_hour)} per "
            f"card-hour){per}")


def runs_fit(plan: Plan) -> str:
    """How much of the campaign fits, in one phrase."""
    s = plan.summary
    if plan.embedding is not None:
        e = plan.embedding
        return (f"{e.versions_fit} of {e.versions_wanted} version"
                f"{'s' if e.versions_wanted != 1 else ''} fit, "
                f"{s.runs_scheduled} of {s.runs_total} shards")
    text = fit_words(plan)
    controls = s.runs_total - s.matrix_runs
    if controls:
        text += f" (+{s.runs_scheduled - s.matrix_runs_fit}/{controls} evals)"
    return text


def headline(plan: Plan) -> str:
    """The one-line summary shown on every screen (idle card-hours are on the Fit screen:
    the line keeps to 80 columns with what is known about the packing)."""
    c, s = plan.campaign, plan.summary
    measured = measured_line(plan)
    return (f"{c.name} · {window(c.window_hours)} × {c.cards} {c.card} · {runs_fit(plan)} · "
            f"{s.utilization:.0%} busy"
            + (f" · {measured.split(' (')[0]}" if measured else ""))


def card_line(key: str, card: Card, price: float | None, currency: str = "USD") -> str:
    """One catalog card in a fixed-width line: memory, architecture, bandwidth, price."""
    shown = f"{price:g} {currency}/h" if price is not None else "price —"
    return (f"{key:<12} {card.name:<24.24} {card.memory_gib:>4g} GB  "
            f"{card.architecture:<13.13} {card.sm:<6} {card.bandwidth_gbps:>5g} GB/s  "
            f"{card.bf16_tflops:>5.0f} TF  {shown}")

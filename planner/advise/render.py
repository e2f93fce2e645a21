"""`advise` in words: the ranked options, the frontier, and what falls short."""

from __future__ import annotations

import textwrap
from collections import Counter

from planner.advise.model import Advice, FrontierCell, Option

WIDTH = 100


def wrap(text: str, indent: str = "  ") -> list[str]:
    """A long sentence as lines of at most WIDTH characters."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent, break_on_hyphens=False)


HEAD = (f"  {'#':>3}  {'card':<12} {'cards':>5} {'days':>4} {'card-h':>7} {'cost':>11} "
        f"{'runs':>7} {'seeds':>5} {'sets':>4} {'1st set':>8} {'idle':>6} {'left':>6} "
        f"{'headroom':>8}  figures")


def cost(o: Option) -> str:
    """The option's cost, or — without a price."""
    return f"{o.cost_total:,.0f} {o.currency}" if o.cost_total is not None else "—"


def seeds(o: Option) -> str:
    """Complete seed sets of all, or — for embedding."""
    return "—" if o.complete_seeds is None else f"{o.complete_seeds}/{o.seeds_total}"


def sets(o: Option) -> str:
    """Complete seed sets the order holds (its capacity), or — for embedding."""
    return "—" if o.seed_sets is None else str(o.seed_sets)


def first_set(o: Option) -> str:
    """Hour the first complete seed set ends."""
    h = o.first_complete_seed_end_h
    return "—" if h is None else f"h {h:.1f}"


def headroom(o: Option) -> str:
    """Smallest memory headroom."""
    return "—" if o.min_headroom_gib is None else f"{o.min_headroom_gib:.1f} G"


def row(rank: int | str, o: Option, current: bool = False) -> str:
    """One option as a table row (see HEAD)."""
    mark = "●" if current else " "
    return (f"{mark} {rank!s:>3}  {o.card:<12} {o.cards:>5} {o.window_days:>4} "
            f"{o.card_hours:>7g} {cost(o):>11} {f'{o.runs_fit}/{o.runs_total}':>7} "
            f"{seeds(o):>5} {sets(o):>4} {first_set(o):>8} {o.idle_card_hours:>6.1f} "
            f"{o.hours_left_h:>6.1f} {headroom(o):>8}  {', '.join(o.provenance)}")


def reach(o: Option) -> str:
    """How far an order goes, in words."""
    unit = "versions" if o.complete_seeds is None else "matrix runs"
    text = f"{o.card} × {o.cards}, {o.window_days} days: {o.runs_fit} of {o.runs_total} {unit}"
    if o.complete_seeds is not None:
        text += f", {o.complete_seeds} of {o.seeds_total} seed sets"
    if o.evaluations_total:
        text += f", {o.evaluations_fit} of {o.evaluations_total} evaluations"
    return text


def frontier_table(adv: Advice) -> list[str]:
    """Smallest count per card (rows) and window (columns)."""
    cells = {(c.card, c.window_days): c for c in adv.frontier}
    lines = [f"  {'card':<12} " + " ".join(f"{f'{d} days':>8}" for d in adv.windows)]
    for key in adv.cards:
        parts = []
        for d in adv.windows:
            c = cells.get((key, d))
            parts.append(f"{c.cards if c is not None and c.cards is not None else '—':>8}")
        lines.append(f"  {key:<12} " + " ".join(parts))
    return lines


def shortfalls(cells: list[FrontierCell]) -> list[str]:
    """For each card and window where no count meets the goal: the closest and its needs."""
    out = []
    for c in cells:
        if c.cards is None and c.option is not None:
            out.append(f"  {reach(c.option)}")
            out += [line for n in c.option.needs for line in wrap(f"      {n}", "        ")]
    return out


def plural(n: int, word: str) -> str:
    """`1 order`, `2 orders`."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def span(values: list[int]) -> str:
    """`4`, `1–8` or `1, 2, 4`."""
    if len(values) > 2 and values == list(range(values[0], values[-1] + 1)):
        return f"{values[0]}–{values[-1]}"
    return ", ".join(map(str, values))


def searched(adv: Advice) -> int:
    """Orders the search went through: those planned, those the planner refused, and
    those of the cards left out for memory (the count a progress line shows)."""
    return (adv.planned + len(adv.skipped)
            + len(adv.left_out) * len(adv.counts) * len(adv.windows))


def headline(adv: Advice) -> str:
    """What was searched: `264 of 312 orders planned — 11 card models × …`."""
    total = searched(adv)
    planned = (plural(adv.planned, "order") if total == adv.planned
               else f"{adv.planned} of {plural(total, 'order')}")
    return (f"{adv.campaign}: {planned} planned — {plural(len(adv.cards), 'card model')} × "
            f"{'count' if len(adv.counts) == 1 else 'counts'} {span(adv.counts)} × "
            f"{span(adv.windows)} {'day' if adv.windows == [1] else 'days'}; goal: {adv.goal}")


def offer(options: list[Option]) -> str:
    """The cheapest priced order meeting the goal, as the cloud launchers would be asked for
    it; empty when no price is known (none is ever made up)."""
    priced = [o for o in options if o.cost_total is not None and o.price_per_card_hour]
    if not priced:
        return ""
    o = min(priced, key=lambda o: o.cost_total or 0.0)
    hourly = (o.price_per_card_hour or 0.0) * o.cards
    terms = [t for t in (f"SkyPilot {o.sky}" if o.sky else "",
                         f"dstack {o.dstack} (max_price {hourly:,.2f})" if o.dstack else "")
             if t]
    return (f"Cheapest offer known: {o.card} × {o.cards}, {o.window_days} days at "
            f"{o.price_per_card_hour:,.2f} {o.currency}/card-hour"
            + (f"; {', '.join(terms)}" if terms else ""))


def render(adv: Advice, top: int = 10) -> str:
    """The advice as text."""
    lines = [headline(adv)]
    if adv.left_out:
        lines += wrap("Left out (memory; name them in --cards to plan them anyway): "
                      + "; ".join(adv.left_out))
    if adv.budget is not None:
        lines.append(f"Budget {adv.budget:,.2f}: {adv.over_budget} order"
                     f"{'s' if adv.over_budget != 1 else ''} meeting the goal cost more or "
                     "have no price")
    lines.append("")
    if adv.options:
        lines += wrap(f"{plural(len(adv.options), 'order')} "
                      f"{'meets' if len(adv.options) == 1 else 'meet'} the goal; ranked "
                      f"{adv.ranking_note}")
        lines += wrap("  card-h: card-hours bought; 1st set: hour the first complete seed set "
                      "ends; idle: idle card-hours; left: hours before the usable window "
                      "closes; headroom: smallest memory headroom, GiB", "  ")
        lines.append(HEAD)
        for i, o in enumerate(adv.options[:top], 1):
            lines.append(row(i, o, (o.card, o.cards, o.window_days) == adv.current))
        if adv.current in {(o.card, o.cards, o.window_days) for o in adv.options[:top]}:
            lines.append("  ●: the preset's own order")
        if len(adv.options) > top:
            lines.append(f"  … {len(adv.options) - top} more (--top N lists more, --json all)")
        best = adv.options[0]
        lines += ["", *wrap(f"Best: {reach(best)}; figures {'; '.join(best.figures)}")]
        cheapest = offer(adv.options)
        if cheapest:
            lines += wrap(cheapest)
    else:
        lines.append(f"No order in the space meets the goal {adv.goal}.")
        if adv.best_reachable is not None:
            lines.append(f"Closest: {reach(adv.best_reachable)}; it would need:")
            lines += [f"  {n}" for n in adv.best_reachable.needs]
    lines += ["", "Smallest count that meets the goal, per card and window (—: none in "
              "the space)", *frontier_table(adv)]
    short = shortfalls(adv.frontier)
    if short:
        lines += ["", "Where no count meets it: the closest order, and what it would need",
                  *short]
    if adv.skipped:
        reasons = Counter(s.reason for s in adv.skipped)
        lines += ["", f"Not planned: {len(adv.skipped)} orders"]
        lines += [f"  {n} × {reason}" for reason, n in reasons.items()]
    return "\n".join(lines)

"""`advise`: which order — card model × card count × window — fits the campaign, cheapest
first. One pure function, `advise`, that the CLI and the TUI share.

Every order of the space is planned with the same `plan_campaign` as a direct plan, from the
preset moved to that card the way Compare moves it (figures derived from the preset's own
card, labelled). Orders that meet the goal are ranked cheapest first where a price is known
(from the preset or the user's catalog; never invented), then the unpriced ones by fewest
card-hours bought, and the advice says which ranking it used.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Literal

from planner.advise.goal import Goal, complete_seeds, goal_preset, headroom, meets, needs
from planner.advise.model import Advice, FrontierCell, Option, Skipped, Space
from planner.campaign import plan_campaign
from planner.errors import InputError
from planner.figures.estimates import DEFAULT_ESTIMATE, on_card
from planner.figures.measurements import Measurements
from planner.planfile.plan import Plan
from planner.spec.catalog import Card, Catalog
from planner.spec.costs import Estimate
from planner.spec.preset import Preset

Progress = Callable[[int, int], None]
"""Called as `progress(done, total)` after each order is planned; may raise to stop."""


def order_preset(preset: Preset, catalog: Catalog, card: str, cards: int, window_days: int,
                 measurements: Measurements | None = None) -> Preset:
    """The campaign on one order: the card changed the way Compare changes it (figures
    derived from the preset's own card, or from the measurements), then the count and the
    window. Both the search and adopting an option go through here."""
    moved = on_card(preset, card)
    standard = window_days in (3, 7, 30)
    campaign = moved.campaign.model_copy(update={
        "cards": cards, "window_days": window_days if standard else None,
        "window_hours": None if standard else float(window_days * 24)})
    return moved.model_copy(update={"campaign": campaign})


def plan_order(preset: Preset, catalog: Catalog, measurements: Measurements | None,
               estimate: Estimate | None, *, created: datetime | None = None,
               source: str | None = None, ranking: bool = False) -> Plan:
    """The one call advise makes to the planner, for the search and for `--out` alike, so
    an exported option is the plan the search ranked. `estimate` (typical or cautious end
    of the cross-card range) defaults to the planner's own default when not given.
    `ranking`: a plan for the table, whose capacity leaves out the extra variants it does
    not show (the rest of the plan is the same)."""
    return plan_campaign(preset, catalog, measurements=measurements, created=created,
                         source=source, estimate=estimate or DEFAULT_ESTIMATE,
                         extra_variants=not ranking)


def advise(preset: Preset, catalog: Catalog, space: Space, goal: Goal, *,
           budget: float | None = None, measurements: Measurements | None = None,
           estimate: Estimate | None = None, progress_fn: Progress | None = None) -> Advice:
    """Plan every order of `space`, keep those meeting `goal` (and `budget`), rank them,
    and work out the frontier. Raises InputError for a card the catalog lacks or an error
    in the measurements file; orders the planner refuses are listed in `skipped`."""
    preset = goal_preset(goal, preset)
    keys = list(space.cards) if space.cards is not None else list(catalog.cards)
    for key in keys:
        catalog.get(key, field="--cards")
    orders = [(n, days) for days in space.windows for n in space.counts]
    total = len(keys) * len(orders)
    planned: dict[tuple[str, int, int], Option] = {}
    skipped: list[Skipped] = []
    left_out: list[str] = []
    searched: list[str] = []
    for i, key in enumerate(keys):
        # By default a card is searched only when every configuration fits its memory;
        # the first order that plans tells, since memory does not depend on the order.
        check_memory = space.cards is None
        mine: dict[tuple[str, int, int], Option] = {}
        refused: list[Skipped] = []
        for j, (n, days) in enumerate(orders):
            try:
                moved = order_preset(preset, catalog, key, n, days, measurements)
                plan = plan_order(moved, catalog, measurements, estimate, ranking=True)
            except InputError as exc:
                if measurements is not None and exc.file and exc.file == measurements.file:
                    raise
                refused.append(Skipped(card=key, cards=n, window_days=days, reason=exc.message))
                continue
            finally:
                if progress_fn is not None:
                    progress_fn(i * len(orders) + j + 1, total)
            if check_memory:
                check_memory = False
                unfit = [f.config for f in plan.assumptions.figures if not f.fits]
                if unfit:
                    left_out.append(f"{key}: {', '.join(unfit)} "
                                    f"{'does' if len(unfit) == 1 else 'do'} not fit its "
                                    f"{catalog.cards[key].memory_gib:g} GB")
                    break
            mine[(key, n, days)] = option_of(moved, plan, goal, days, catalog.cards[key])
        else:
            searched.append(key)
            planned.update(mine)
            skipped += refused
            continue
        if progress_fn is not None:
            progress_fn((i + 1) * len(orders), total)
    return _rank(preset, goal, space, searched, left_out, planned, skipped, budget)


def option_of(preset: Preset, plan: Plan, goal: Goal, days: int,
              card: Card | None = None) -> Option:
    """One planned order as an option; with its `card`, named as the cloud launchers name
    it."""
    s, c, a = plan.summary, plan.campaign, plan.assumptions
    emb = plan.embedding
    training = preset.training
    figures = [fig for f in a.figures for fig in (f.step_time_s, f.peak_memory_gib)]
    if a.throughput_tokens_per_s is not None:
        figures.append(a.throughput_tokens_per_s)
    evaluations = sum(1 for r in plan.runs if r.kind == "robustness")
    return Option(
        card=c.card, card_name=c.card_name, cards=c.cards, window_days=days,
        card_hours=s.card_hours_bought, price_per_card_hour=c.price_per_card_hour,
        cost_total=s.cost_total, currency=c.currency, meets_goal=meets(goal, plan),
        runs_fit=emb.versions_fit if emb else s.matrix_runs_fit,
        runs_total=emb.versions_wanted if emb else s.matrix_runs,
        evaluations_fit=evaluations,
        evaluations_total=0 if emb else s.runs_total - s.matrix_runs,
        complete_seeds=None if emb else len(complete_seeds(plan)),
        seeds_total=len(training.seeds) if training else None,
        seed_sets=s.capacity.seed_sets if s.capacity is not None else None,
        first_complete_seed_end_h=s.first_complete_seed_end_h, makespan_h=s.makespan_h,
        idle_card_hours=s.idle_card_hours,
        hours_left_h=round(c.usable_until_h - max(s.makespan_h, c.usable_from_h), 4),
        min_headroom_gib=headroom(plan), provenance=sorted({f.source for f in figures}),
        figures=list(dict.fromkeys(f.label() for f in figures)),
        needs=needs(goal, preset, plan),
        sky=f"{card.sky_name}:{c.cards}" if card and card.sky_name else "",
        dstack=(f"{card.dstack_name}:{card.memory_gib:g}GB:{c.cards}"
                if card and card.dstack_name else ""))


def _sort_key(order: dict[str, int]) -> Callable[[Option], tuple[float, ...]]:
    """Priced options first, cheapest first; then unpriced ones, fewest card-hours first.
    Ties: fewer card-hours, the shorter window (results sooner), the earlier first complete
    seed set, more runs, then the order the cards were given in."""
    inf = float("inf")

    def key(o: Option) -> tuple[float, ...]:
        first = o.first_complete_seed_end_h if o.first_complete_seed_end_h is not None else inf
        tail = (o.card_hours, o.window_days, first, -o.runs_fit, order[o.card], o.cards)
        if o.cost_total is not None:
            return (0, o.cost_total, *tail)
        return (1, o.card_hours, *tail)

    return key


def _rank(preset: Preset, goal: Goal, space: Space, keys: list[str], left_out: list[str],
          planned: dict[tuple[str, int, int], Option], skipped: list[Skipped],
          budget: float | None) -> Advice:
    meeting = [o for o in planned.values() if o.meets_goal]
    within = meeting if budget is None else [
        o for o in meeting if o.cost_total is not None and o.cost_total <= budget + 1e-9]
    unpriced = sorted({o.card for o in within if o.cost_total is None})
    how = " (give campaign.price_per_card_hour in the preset, or price the cards in --catalog FILE)"
    ranked_by: Literal["cost", "card-hours", "cost, then card-hours"]
    if not unpriced:
        ranked_by, note = "cost", "cheapest first (prices from the preset or your catalog)"
    elif len(unpriced) == len({o.card for o in within}):
        ranked_by, note = "card-hours", "by fewest card-hours bought: no price known" + how
    else:
        ranked_by = "cost, then card-hours"
        note = (f"cheapest first; no price known for {', '.join(unpriced)}: those follow, by "
                "fewest card-hours bought" + how)
    order = {k: i for i, k in enumerate(keys)}
    options = sorted(within, key=_sort_key(order))
    frontier: list[FrontierCell] = []
    for days in space.windows:
        for key in keys:
            cell = [planned[(key, n, days)] for n in sorted(space.counts)
                    if (key, n, days) in planned]
            met = [o for o in cell if o.meets_goal]
            if met:
                frontier.append(FrontierCell(card=key, window_days=days, cards=met[0].cards,
                                             option=met[0]))
            else:
                frontier.append(FrontierCell(card=key, window_days=days, cards=None,
                                             option=_closest(cell, goal)))
    c = preset.campaign
    current = (c.card, c.cards, c.window_days) if c.window_days else None
    return Advice(
        campaign=c.name, goal=goal.text(), cards=keys, left_out=left_out,
        counts=list(space.counts), windows=list(space.windows), planned=len(planned),
        ranked_by=ranked_by, ranking_note=note, budget=budget,
        over_budget=len(meeting) - len(within), options=options, frontier=frontier,
        best_reachable=None if meeting else _closest(list(planned.values()), goal),
        skipped=skipped, current=current)


def _closest(options: Sequence[Option], goal: Goal) -> Option | None:
    """The option that goes furthest toward the goal, the fewest card-hours among equals."""
    if not options:
        return None
    return max(options, key=lambda o: (_progress(o, goal), -o.card_hours))


def _progress(o: Option, goal: Goal) -> tuple[int, ...]:
    seeds = o.complete_seeds or 0
    if o.complete_seeds is None:
        return (o.runs_fit,)
    if goal.kind == "seeds":
        return (min(seeds, goal.count), o.runs_fit, o.evaluations_fit)
    if goal.kind == "runs":
        return (min(o.runs_fit, goal.count), seeds, o.evaluations_fit)
    return (o.runs_fit + o.evaluations_fit, seeds)

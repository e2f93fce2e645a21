"""The order advisor's search: against a brute force over the space, goals, budget, ranking."""

from __future__ import annotations

import itertools
import re
from pathlib import Path

import pytest

from planner.advise.goal import Goal, parse_goal
from planner.advise.model import Space
from planner.advise.search import advise, order_preset
from planner.campaign import plan_campaign
from planner.figures.estimates import on_card
from planner.planfile.plan import Plan
from planner.spec.catalog import Catalog, load_catalog
from planner.spec.loading import load_preset, parse_preset
from planner.spec.preset import Preset
from tests.conftest import shipped

PRICES = {"a6000": 0.49, "a40": 0.44, "l40s": 0.86, "a100-80": 1.29, "h100-sxm": 2.49}


def priced(tmp_path: Path, prices: dict[str, float] = PRICES) -> Catalog:
    """The shipped catalog with the user's prices for some cards."""
    f = tmp_path / "prices.toml"
    f.write_text("".join(f"[cards.{k}]\nprice_per_card_hour = {v}\n" for k, v in prices.items()))
    return load_catalog(f)


def direct(preset: Preset, catalog: Catalog, card: str, cards: int, days: int) -> Plan:
    """Plan one order the long way: Compare's move to the card, then the count and the
    window written into the preset and validated as a file would be."""
    data = on_card(preset, card).model_dump(mode="json", exclude_none=True)
    data["campaign"].update(cards=cards, window_days=days)
    return plan_campaign(parse_preset(data, "order.toml"), catalog)


def met(goal: Goal, plan: Plan) -> bool:
    """The goal, written out again for the brute force."""
    s = plan.summary
    if goal.kind == "all":
        return not plan.not_fitting
    if goal.kind == "runs":
        return s.matrix_runs_fit >= goal.count
    if goal.kind == "versions":
        assert plan.embedding is not None
        return plan.embedding.versions_fit >= goal.count
    complete = [seed for seed in range(100)
                if s.table and all(seed in row.complete_seeds for row in s.table)]
    return len(complete) >= goal.count


def brute_force(preset: Preset, catalog: Catalog, cards: tuple[str, ...],
                counts: tuple[int, ...], windows: tuple[int, ...],
                goal: Goal) -> tuple[float, set[tuple[str, int, int]]]:
    """The cheapest cost of an order meeting the goal, and every order at that cost."""
    costs: dict[tuple[str, int, int], float] = {}
    for card, n, days in itertools.product(cards, counts, windows):
        plan = direct(preset, catalog, card, n, days)
        if met(goal, plan):
            assert plan.campaign.price_per_card_hour is not None
            costs[(card, n, days)] = plan.campaign.price_per_card_hour * n * days * 24
    best = min(costs.values())
    return best, {k for k, v in costs.items() if abs(v - best) < 1e-6}


@pytest.mark.parametrize(("preset", "goal", "cards", "counts", "windows"), [
    ("ablation-7d", "all", ("a6000", "l40s", "a100-80"), (1, 2, 3, 4), (3, 7)),
    ("ablation-7d", "seeds:1", ("a6000", "a40", "h100-sxm"), (1, 2, 3), (3, 7, 30)),
    ("ablation-3d", "all", ("a6000", "l40s"), (1, 2), (3, 7)),
    ("ablation-30d", "runs:10", ("a40", "l40s", "a100-80"), (2, 3, 4, 6), (7, 30)),
    ("adaptation-30d", "seeds:2", ("a6000", "a100-80"), (1, 2, 4), (7, 30)),
    ("embedding-7d", "all", ("a6000", "l40s", "h100-sxm"), (1, 2, 4), (3, 7)),
])
def test_first_option_is_the_brute_force_cheapest(tmp_path: Path, preset: str, goal: str,
                                                   cards: tuple[str, ...],
                                                   counts: tuple[int, ...],
                                                   windows: tuple[int, ...]) -> None:
    catalog = priced(tmp_path)
    p, _ = load_preset(preset)
    g = parse_goal(goal)
    result = advise(p, catalog, Space(cards, counts, windows), g)
    best_cost, best_orders = brute_force(p, catalog, cards, counts, windows, g)
    first = result.options[0]
    assert result.ranked_by == "cost"
    assert first.cost_total == pytest.approx(best_cost, abs=0.01)
    assert (first.card, first.cards, first.window_days) in best_orders
    costs = [o.cost_total for o in result.options]
    assert costs == sorted(costs)


def test_options_carry_what_the_direct_plan_says(tmp_path: Path) -> None:
    catalog = priced(tmp_path)
    p, _ = load_preset("ablation-7d")
    result = advise(p, catalog, Space(("a6000", "l40s"), (3, 4, 5), (7,)), Goal("all"))
    for o in result.options:
        plan = direct(p, catalog, o.card, o.cards, o.window_days)
        s = plan.summary
        assert (o.runs_fit, o.runs_total) == (s.matrix_runs_fit, s.matrix_runs)
        assert o.complete_seeds == 3 and o.seeds_total == 3
        assert o.first_complete_seed_end_h == s.first_complete_seed_end_h
        assert o.idle_card_hours == s.idle_card_hours
        assert o.cost_total == s.cost_total
        assert o.hours_left_h == pytest.approx(plan.campaign.usable_until_h - s.makespan_h)
        budget = plan.assumptions.memory_budget_gib
        assert o.min_headroom_gib == pytest.approx(
            min(budget - f.planned_peak_gib for f in plan.assumptions.figures))
    on_own = [o for o in result.options if o.card == "a6000"]
    assert on_own and all(o.provenance == ["entered"] for o in on_own)
    moved = [o for o in result.options if o.card == "l40s"]
    assert moved and all(o.provenance == ["scaled"] for o in moved)
    assert moved[0].figures == ["scaled from NVIDIA RTX A6000"]


def test_order_preset_moves_like_compare() -> None:
    catalog = load_catalog()
    p, _ = load_preset("ablation-7d")
    moved = order_preset(p, catalog, "l40s", 2, 3)
    by_compare = on_card(p, "l40s")
    assert moved.ablation == by_compare.ablation
    assert (moved.campaign.card, moved.campaign.cards, moved.campaign.hours) == ("l40s", 2, 72)
    assert order_preset(p, catalog, "a6000", 4, 7) == p


def test_goal_seeds_keeps_orders_with_k_complete_seed_sets() -> None:
    p, _ = load_preset("ablation-30d")
    space = Space(("a6000", "l40s"), (2, 4, 6, 8), (7, 30))
    two = advise(p, load_catalog(), space, parse_goal("seeds:2"))
    every = advise(p, load_catalog(), space, parse_goal("all"))
    assert two.options and all((o.complete_seeds or 0) >= 2 for o in two.options)
    assert len(two.options) > len(every.options)
    assert all(o.complete_seeds == 5 and o.evaluations_fit == o.evaluations_total
               for o in every.options)


def test_goal_runs_counts_matrix_runs() -> None:
    p, _ = load_preset("ablation-7d")
    space = Space(("a6000",), tuple(range(1, 9)), (3,))
    result = advise(p, load_catalog(), space, parse_goal("runs:12"))
    assert result.options and all(o.runs_fit >= 12 for o in result.options)
    assert result.frontier[0].cards == min(o.cards for o in result.options)
    smaller = [f for f in result.frontier if f.cards is not None]
    assert smaller and smaller[0].option is not None and smaller[0].option.runs_fit >= 12


def test_goal_versions_on_an_embedding_campaign() -> None:
    data = shipped("embedding-7d")
    data["embedding"]["versions"] = 3
    p = parse_preset(data, "e.toml")
    space = Space(("a6000", "h100-sxm"), (1, 2, 4, 8), (3, 7))
    two = advise(p, load_catalog(), space, parse_goal("versions:2"))
    three = advise(p, load_catalog(), space, parse_goal("all"))
    assert two.options and all(o.runs_fit >= 2 for o in two.options)
    assert all(o.runs_fit == 3 and o.runs_total == 3 for o in three.options)
    assert {(o.card, o.cards, o.window_days) for o in three.options} < {
        (o.card, o.cards, o.window_days) for o in two.options}
    assert all(o.complete_seeds is None and o.min_headroom_gib is None for o in two.options)


def test_budget_keeps_only_orders_within_it(tmp_path: Path) -> None:
    catalog = priced(tmp_path)
    p, _ = load_preset("ablation-7d")
    space = Space(("a6000", "a40", "l40s"), tuple(range(1, 9)), (7, 30))
    free = advise(p, catalog, space, Goal("all"))
    budget = 450.0
    capped = advise(p, catalog, space, Goal("all"), budget=budget)
    assert capped.options and all(o.cost_total is not None and o.cost_total <= budget
                                  for o in capped.options)
    assert capped.over_budget == len(free.options) - len(capped.options) > 0
    assert [o for o in free.options if o.cost_total is not None
            and o.cost_total <= budget] == capped.options
    broke = advise(p, catalog, space, Goal("all"), budget=10.0)
    assert broke.options == [] and broke.over_budget == len(free.options)


def test_unknown_prices_rank_by_card_hours_and_say_so() -> None:
    p, _ = load_preset("ablation-7d")
    result = advise(p, load_catalog(), Space(("a6000", "l40s"), (2, 4, 6, 8), (7, 30)),
                    Goal("all"))
    assert result.ranked_by == "card-hours"
    assert "fewest card-hours" in result.ranking_note and "no price" in result.ranking_note
    hours = [o.card_hours for o in result.options]
    assert hours == sorted(hours) and all(o.cost_total is None for o in result.options)


def test_some_prices_rank_priced_first_then_by_card_hours(tmp_path: Path) -> None:
    catalog = priced(tmp_path, {"a6000": 0.49})
    p, _ = load_preset("ablation-7d")
    result = advise(p, catalog, Space(("a6000", "l40s"), (2, 4, 6, 8), (7, 30)), Goal("all"))
    assert result.ranked_by == "cost, then card-hours"
    assert "no price known for l40s" in result.ranking_note
    kinds = [o.cost_total is None for o in result.options]
    assert kinds == sorted(kinds)


def test_a_price_in_the_preset_is_for_its_own_card_only() -> None:
    data = shipped("ablation-7d")
    data["campaign"]["price_per_card_hour"] = 0.5
    p = parse_preset(data, "p.toml")
    result = advise(p, load_catalog(), Space(("a6000", "l40s"), (4,), (7, 30)), Goal("all"))
    assert {o.card: o.price_per_card_hour for o in result.options} == {"a6000": 0.5,
                                                                        "l40s": None}


def test_frontier_is_the_smallest_count_meeting_the_goal() -> None:
    p, _ = load_preset("ablation-7d")
    space = Space(("a6000", "rtx6000ada"), tuple(range(1, 9)), (3, 7))
    result = advise(p, load_catalog(), space, Goal("all"))
    meeting = {(o.card, o.cards, o.window_days) for o in result.options}
    assert len(result.frontier) == 4
    for cell in result.frontier:
        counts = [n for n in space.counts if (cell.card, n, cell.window_days) in meeting]
        assert cell.cards == (min(counts) if counts else None)
        assert cell.option is not None
        assert bool(cell.option.needs) == (cell.cards is None)


def test_what_a_short_order_would_need() -> None:
    p, _ = load_preset("ablation-7d")
    result = advise(p, load_catalog(), Space(("a6000",), (1,), (3,)), parse_goal("seeds:1"))
    assert result.options == []
    closest = result.best_reachable
    assert closest is not None and closest.complete_seeds == 0
    assert re.fullmatch(r"seed 0 of .+ need \d+\.\d more card-hours", closest.needs[0])
    # Seed 0 alone is six runs, 192.3 card-hours: more than 3 cards × 64 usable hours.
    assert closest.needs[-1] == ("at least 4 cards for this window (192.3 card-hours of work "
                                 "in 64.0 usable hours per card)")


def test_a_run_longer_than_the_window_asks_for_a_longer_window() -> None:
    p, _ = load_preset("ablation-30d")
    result = advise(p, load_catalog(), Space(("a6000",), (8,), (3,)), Goal("all"))
    assert result.best_reachable is not None
    assert "cannot finish in the 57.0 usable hours" in result.best_reachable.needs[-1]


def test_default_cards_leave_out_those_without_the_memory() -> None:
    p, _ = load_preset("ablation-7d")
    result = advise(p, load_catalog(), Space(None, (4,), (7,)), Goal("all"))
    assert "rtx4090" not in result.cards and "a6000" in result.cards
    assert any(line.startswith("rtx4090: ") and "24 GB" in line for line in result.left_out)
    assert result.planned == len(result.cards)


def test_orders_the_planner_refuses_are_listed() -> None:
    data = shipped("ablation-7d")
    data["ablation"].update(cards_per_run=2, effective_batch=128)
    p = parse_preset(data, "p.toml")
    result = advise(p, load_catalog(), Space(("a6000",), (1, 2, 4), (30,)), Goal("runs:1"))
    assert [(s.cards, "2 cards per run" in s.reason) for s in result.skipped] == [(1, True)]
    assert {o.cards for o in result.options} == {2, 4}


def test_progress_reports_every_order() -> None:
    seen: list[tuple[int, int]] = []
    p, _ = load_preset("ablation-7d")
    advise(p, load_catalog(), Space(None, (1, 2), (3, 7)), Goal("all"),
           progress_fn=lambda done, total: seen.append((done, total)))
    total = len(load_catalog().cards) * 4
    assert seen[-1] == (total, total)
    assert [d for d, _ in seen] == sorted(d for d, _ in seen)


@pytest.mark.parametrize(("text", "words"), [
    ("most", "not a goal"), ("seeds:x", "whole number"), ("runs:0", "at least 1"),
])
def test_bad_goals(text: str, words: str) -> None:
    from planner.errors import InputError

    with pytest.raises(InputError, match=words):
        parse_goal(text)


def test_measurements_flow_into_every_order() -> None:
    from tests.test_tui_measure import measured

    p, _ = load_preset("ablation-7d")
    m = measured(p)
    result = advise(p, load_catalog(), Space(("a6000", "l40s"), (2, 4), (7,)),
                    Goal("runs", 1), measurements=m)
    by_card = {o.card: o for o in result.options}
    assert by_card["a6000"].provenance == ["measured"]
    assert by_card["l40s"].provenance == ["scaled"]
    assert by_card["l40s"].figures == ["scaled from NVIDIA RTX A6000"]
    direct_plan = plan_campaign(order_preset(p, load_catalog(), "l40s", 2, 7, m),
                                load_catalog(), measurements=m)
    two = next(o for o in result.options if (o.card, o.cards) == ("l40s", 2))
    assert two.first_complete_seed_end_h == direct_plan.summary.first_complete_seed_end_h

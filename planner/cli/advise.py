"""`campaign-planner advise`: which order fits the campaign, cheapest first.

The search is `planner.advise.search.advise`; this module reads the arguments, shows the result,
and exports the chosen option exactly as `campaign-planner --out` exports a plan.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner.advise.goal import check_goal, goal_preset, parse_goal
from planner.advise.model import Advice, Option, parse_cards, parse_counts, parse_windows
from planner.advise.search import Estimate, advise, order_preset, plan_order
from planner.advise.what_if import in_days, pinned
from planner.errors import InputError
from planner.figures.measurements import Measurements
from planner.spec.catalog import Catalog
from planner.spec.overrides import apply_overrides
from planner.spec.preset import Preset

PROGRESS_AFTER_S = 1.0
"""A search still running after this long shows a progress line on stderr."""

JSON_FIELDS = ("card", "cards", "window_days", "cost_total", "currency", "runs_fit",
               "runs_total", "complete_seeds", "seed_sets", "first_complete_seed_end_h",
               "idle_card_hours", "provenance")
"""Fields every option of `--json` carries at least (it carries all of them)."""


def parser() -> Any:
    """Arguments of `advise`."""
    from planner.cli.args import Parser, add_what_if

    p = Parser(prog="campaign-planner advise",
               description="Plan the campaign on every order — card model × card count × "
                            "window — and list those that meet the goal, cheapest first when "
                            "prices are known (from the preset or --catalog), otherwise fewest "
                            "card-hours; with the smallest count per window and card, and what "
                            "an order that falls short would need.")
    p.add_argument("--preset", metavar="NAME|PATH", help="preset (default: ablation-7d)")
    p.add_argument("--cards", metavar="A,B,...|N",
                   help="card models to consider (default: every catalog card on which each "
                        "configuration fits memory); a whole number N instead: the count "
                        "rented, as --counts N")
    p.add_argument("--counts", metavar="1-8",
                   help="card counts, e.g. 1-8 or 1,2,4,8 (default: 1-8)")
    p.add_argument("--windows", metavar="3,7,30",
                   help="windows in days: 3, 7, 30, or whole days beyond 30 (default: 3,7,30)")
    p.add_argument("--goal", metavar="GOAL", default="all",
                   help="all (every run or version), seeds:K (K complete seed sets), runs:N "
                        "(N matrix runs) or versions:K (embedding); default: all")
    p.add_argument("--budget", metavar="AMOUNT", type=float,
                   help="keep orders whose cost is at most AMOUNT (in the preset's currency)")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog (prices, cards)")
    p.add_argument("--measurements", metavar="FILE", help="measured figures to plan from")
    p.add_argument("--estimate", choices=("typical", "cautious"),
                   help="which end of a derived figure's range to plan on")
    p.add_argument("--top", metavar="N", type=int, default=10,
                   help="options to list (default: 10; --json lists all)")
    p.add_argument("--json", action="store_true", help="print the options as JSON, best first")
    p.add_argument("--out", metavar="DIR",
                   help="write the chosen option's plan.toml and order.toml to DIR")
    p.add_argument("--pick", metavar="N", type=int,
                   help="with --out: the option to write (default: 1, the best)")
    p.add_argument("--force", action="store_true", help="overwrite existing plan files")
    p.add_argument("--created", metavar="ISO8601",
                   help="with --out: timestamp recorded in the plan (default: now)")
    p.add_argument("--contact-name", metavar="NAME", help="with --out: order contact name")
    p.add_argument("--contact-email", metavar="EMAIL", help="with --out: order contact email")
    add_what_if(p, cards=False,
                note="--card, --cards N and --days/--hours pin the search to that card, count "
                     "or window; --seeds changes the seeds searched for",
                days="the window in days, as --windows D: 3, 7, 30 or whole days beyond 30 "
                     "(--hours: the same in hours)")
    return p


class _Progress:
    """Shows `planned K of N orders` on stderr once a search takes longer than
    PROGRESS_AFTER_S; rewritten in place on a terminal, printed once otherwise."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.shown = False
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int) -> None:
        if time.monotonic() - self.start < PROGRESS_AFTER_S:
            return
        if self.tty:
            print(f"\radvise: planned {done} of {total} orders", end="", file=sys.stderr,
                  flush=True)
        elif not self.shown:
            print(f"advise: planning {total} orders…", file=sys.stderr, flush=True)
        self.shown = True

    def close(self) -> None:
        if self.shown and self.tty:
            print(file=sys.stderr)


def _priced(preset: Preset, catalog: Catalog, keys: Sequence[str]) -> bool:
    own = preset.campaign.price_per_card_hour is not None and preset.campaign.card in keys
    return own or any(catalog.cards[k].price_per_card_hour is not None for k in keys)


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner advise`."""
    from planner.cli.args import contact_of, created_at, split_cards, what_if
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import DEFAULT_PRESET, load_preset

    args = parser().parse_args(argv)
    count, models = split_cards(args.cards)
    overrides = in_days(what_if(args, count=count))
    space = pinned(parse_cards(models) if models is not None else None,
                   parse_counts(args.counts) if args.counts is not None else None,
                   parse_windows(args.windows) if args.windows is not None else None,
                   overrides)
    goal = parse_goal(args.goal)
    if args.budget is not None and not args.budget > 0:
        raise InputError("the budget must be a positive amount", field="--budget")
    if args.top < 1:
        raise InputError("list at least 1 option", field="--top")
    if args.pick is not None and (args.out is None or args.pick < 1):
        raise InputError("--pick N (N from 1) chooses the option that --out DIR writes",
                         field="--pick")
    contact = contact_of(args.contact_name, args.contact_email)
    created = created_at(args.created)
    preset, source = load_preset(args.preset or DEFAULT_PRESET)
    catalog = load_catalog(args.catalog)
    preset, changed = apply_overrides(preset, overrides, catalog, source)
    check_goal(goal, preset)
    preset = goal_preset(goal, preset)
    keys = space.cards if space.cards is not None else tuple(catalog.cards)
    for key in keys:
        catalog.get(key, field="--cards")
    if args.budget is not None and not _priced(preset, catalog, keys):
        raise InputError("a budget needs prices: give campaign.price_per_card_hour in the "
                         "preset or price the cards in --catalog FILE", field="--budget")
    measurements: Measurements | None = None
    if args.measurements:
        from planner.figures.measurements import load_measurements

        measurements = load_measurements(args.measurements)
    progress = _Progress()
    try:
        result = advise(preset, catalog, space, goal, budget=args.budget,
                        measurements=measurements, estimate=args.estimate,
                        progress_fn=progress)
    finally:
        progress.close()
    written: list[Path] = []
    if args.out:
        written = _export(result, args.pick or 1, preset, catalog, measurements,
                          args.estimate, args.out, args.force, created, source, contact,
                          changed)
    if args.json:
        print(json.dumps([o.model_dump(mode="json") for o in result.options], indent=2))
        if written:
            print(f"Wrote {', '.join(map(str, written))}", file=sys.stderr)
        return 0
    from planner.advise.render import render

    print("".join(f"Override  {line}\n" for line in changed) + render(result, top=args.top))
    if written:
        print(f"\nWrote option {args.pick or 1}: {', '.join(map(str, written[:-1]))} and "
              f"{written[-1]}")
    elif result.options:
        print("\nNothing written: pass --out DIR (and --pick N) to export an option's "
              "plan.toml and order.toml")
    return 0


def _export(result: Advice, pick: int, preset: Preset, catalog: Catalog,
            measurements: Measurements | None, estimate: Estimate | None, out: str,
            force: bool, created: Any, source: str, contact: Any,
            changed: list[str]) -> list[Path]:
    """Write option `pick` as `campaign-planner --preset <that order> --out` would, naming
    the command line's overrides (`changed`) in its assumptions."""
    from planner.planfile.export import write_exports
    from planner.planfile.order import make_order
    from planner.planfile.plan import with_overrides

    if not result.options:
        raise InputError(f"no order meets the goal {result.goal!r}: nothing written",
                         field="--out")
    if pick > len(result.options):
        raise InputError(f"only {len(result.options)} option"
                         f"{'s meet' if len(result.options) > 1 else ' meets'} the goal",
                         field="--pick")
    chosen: Option = result.options[pick - 1]
    moved = order_preset(preset, catalog, chosen.card, chosen.cards, chosen.window_days,
                         measurements)
    plan = with_overrides(plan_order(moved, catalog, measurements, estimate, created=created,
                                     source=source), changed)
    order, warnings = make_order(moved, plan, catalog.get(chosen.card), contact)
    if warnings:
        plan = plan.model_copy(update={"warnings": [*plan.warnings, *warnings]})
    return write_exports(out, plan, order, force=force)

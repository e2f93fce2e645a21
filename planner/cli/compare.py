"""`campaign-planner compare`: its arguments and its output; the comparison is
`planner.advise.compare`."""

from __future__ import annotations

import json
from collections.abc import Sequence

from planner.advise.compare import DEFAULT_CARDS, compare_cards, render
from planner.errors import InputError
from planner.figures.estimates import DEFAULT_ESTIMATE, ESTIMATES


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner compare`."""
    from planner.cli.args import Parser
    from planner.figures.measurements import load_measurements
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import DEFAULT_PRESET, load_preset

    p = Parser(prog="campaign-planner compare",
               description="Plan the same campaign on several card models side by side: runs "
                            "that fit, hours, memory headroom per configuration, cost where "
                            "priced, and where every figure comes from. Only the card changes.")
    p.add_argument("--preset", metavar="NAME|PATH", help="preset (default: ablation-7d)")
    p.add_argument("--cards", metavar="A,B,...",
                   help=f"catalog keys (default: {','.join(DEFAULT_CARDS)} and the preset's)")
    p.add_argument("--measurements", metavar="FILE", help="measured figures to plan from")
    p.add_argument("--analytic", action="store_true",
                   help="use the analytic tier (formulas on the preset's reference workload) "
                        "instead of the preset's figures")
    p.add_argument("--estimate", choices=ESTIMATES, default=DEFAULT_ESTIMATE,
                   help="plan scaled and analytic figures on the slow end of their range "
                        "(cautious, the default) or on the calibrated value (typical)")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog (prices, cards)")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    if args.analytic and args.measurements:
        raise InputError("give --measurements or --analytic, not both", field="--analytic")
    preset, _source = load_preset(args.preset or DEFAULT_PRESET)
    catalog = load_catalog(args.catalog)
    if args.cards is not None:
        cards = [k.strip() for k in args.cards.split(",") if k.strip()]
        if not cards:
            raise InputError("no card given", field="--cards")
    else:
        cards = list(dict.fromkeys([preset.campaign.card, *DEFAULT_CARDS]))
    for key in cards:
        catalog.get(key, field="--cards")
    m = load_measurements(args.measurements) if args.measurements else None
    rows = compare_cards(preset, catalog, cards, m, analytic=args.analytic,
                         estimate=args.estimate)
    if args.json:
        print(json.dumps([r.model_dump(mode="json") for r in rows], indent=2))
    else:
        print(render(preset, rows))
    return 0

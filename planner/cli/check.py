"""`campaign-planner check`: its arguments and its output; the checks are
`planner.measure.stack`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict

from planner.measure.stack import check_stack, render, torch_facts
from planner.spec.catalog import Catalog


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner check`."""
    from planner.cli.args import Parser
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    p = Parser(prog="campaign-planner check",
               description="Stack preflight: torch and CUDA versions, the arch list of this "
                            "torch build, the target card's compute capability and whether "
                            "kernels exist for it (exact or binary-compatible); with a GPU of "
                            "that capability, a kernel launch in the preset's dtype.",
               epilog="Exit codes: 0 all passed; 1 a check failed; 2 bad input; 3 nothing "
                       "failed but some checks could not run here (CPU-only machine, no torch).")
    p.add_argument("--preset", metavar="NAME|PATH",
                   help="check for the preset's card and order (default: every catalog card)")
    p.add_argument("--card", metavar="KEY", help="check this catalog card")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog")
    p.add_argument("--json", action="store_true", help="print JSON")
    args = p.parse_args(argv)
    catalog: Catalog = load_catalog(args.catalog)
    order = None
    dtype = "bf16"
    if args.preset:
        preset, source = load_preset(args.preset)
        key = args.card or preset.campaign.card
        cards = {key: catalog.get(key, file=source, field="campaign.card")}
        order = (preset.order.cuda, preset.order.pytorch)
        from planner.figures.measured import spec_of

        spec = spec_of(preset)
        dtype = spec.dtype if spec is not None else "bf16"
    elif args.card:
        cards = {args.card: catalog.get(args.card, field="--card")}
    else:
        cards = dict(catalog.cards)
    report = check_stack(cards, torch_facts(), order=order, dtype=dtype)
    if args.json:
        print(json.dumps({"code": report.code,
                          "findings": [asdict(f) for f in report.findings]}, indent=2))
    else:
        print(render(report))
    return report.code

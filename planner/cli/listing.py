"""`campaign-planner presets`, `cards` and `schema`: what the tool ships, listed."""

from __future__ import annotations

import json
from collections.abc import Sequence

from planner.cli.args import Parser


def cmd_presets(argv: Sequence[str]) -> int:
    """List shipped presets, one line each."""
    Parser(prog="campaign-planner presets",
           description="List the presets shipped with campaign-planner.").parse_args(argv)
    from planner.spec.loading import DEFAULT_PRESET, shipped_presets

    presets = shipped_presets()
    width = max(map(len, presets))
    for name, line in presets.items():
        mark = " (default)" if name == DEFAULT_PRESET else ""
        print(f"{name:<{width}}  {line}{mark}")
    return 0


def cmd_cards(argv: Sequence[str]) -> int:
    """List the card catalog."""
    p = Parser(prog="campaign-planner cards", description="List the card catalog.")
    p.add_argument("--catalog", metavar="FILE", help="your own catalog, merged in")
    args = p.parse_args(argv)
    from planner.spec.catalog import load_catalog

    catalog = load_catalog(args.catalog)
    print(f"{'key':<13} {'memory':>7} {'BW GB/s':>8} {'BF16 TF':>8}  {'arch':<14} {'CC':<6} "
          f"price/h  name")
    for key, c in catalog.cards.items():
        # One precision per column: whole GB and GB/s, tenths of a TFLOPS, cents.
        price = f"{c.price_per_card_hour:.2f}" if c.price_per_card_hour is not None else "—"
        print(f"{key:<13} {c.memory_gib:>4.0f} GB {c.bandwidth_gbps:>8,.0f} "
              f"{c.bf16_tflops:>8.1f}  {c.architecture:<14} {c.sm:<6} {price:>7}  {c.name}")
    return 0


def cmd_schema(argv: Sequence[str]) -> int:
    """Print the preset's JSON Schema."""
    Parser(prog="campaign-planner schema",
           description="Print the JSON Schema of a preset file.").parse_args(argv)
    from planner.spec.base import with_descriptions
    from planner.spec.preset import Preset

    print(json.dumps(with_descriptions(Preset).model_json_schema(), indent=2))
    return 0

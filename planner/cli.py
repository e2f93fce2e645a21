"""Command-line front end: headless planning and the small helper commands.

Bad input of any kind ends with one line on stderr naming the file and the field, exit
code 2, and nothing written.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.packing import Solver
    from planner.preset import Contact

COMMANDS: dict[str, tuple[str, str]] = {
    "presets": ("planner.cli", "cmd_presets"),
    "cards": ("planner.cli", "cmd_cards"),
    "schema": ("planner.cli", "cmd_schema"),
    "measure": ("planner.measure.cli", "main"),
    "compare": ("planner.compare", "main"),
    "advise": ("planner.advise_cli", "main"),
    "check": ("planner.stackcheck", "main"),
    "run": ("planner.run.cli", "cmd_run"),
    "status": ("planner.run.cli", "cmd_status"),
    "slurm": ("planner.run.cli", "cmd_slurm"),
    "corpus": ("planner.corpus_cli", "main"),
    "embed": ("planner.embed.cli", "main"),
}


class _Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(message, field=self.prog.split()[-1] if " " in self.prog else "")


def plan_parser() -> argparse.ArgumentParser:
    """Arguments of the headless plan command."""
    p = _Parser(
        prog="campaign-planner",
        description="Plan what fits in a GPU rental window, from a preset, and export the "
                    "plan and the matching order.",
        epilog="Other commands (each takes --help): presets, cards, schema, measure, "
               "compare, advise, check, corpus scan, corpus size, embed, run, status, slurm.",
    )
    p.add_argument("--preset", metavar="NAME|PATH",
                   help="shipped preset name (see `presets`) or a preset file; "
                        "default: ablation-7d")
    p.add_argument("--out", metavar="DIR", help="write DIR/plan.toml and DIR/order.toml")
    p.add_argument("--force", action="store_true", help="overwrite existing plan files")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument("--catalog", metavar="FILE",
                   help="your own card catalog (adds cards, or prices shipped ones)")
    p.add_argument("--created", metavar="ISO8601",
                   help="timestamp recorded in the plan (default: now); fixes the output "
                        "for byte-identical exports")
    p.add_argument("--contact-name", metavar="NAME", help="order contact name")
    p.add_argument("--contact-email", metavar="EMAIL", help="order contact email")
    p.add_argument("--measurements", metavar="FILE",
                   help="plan from measured figures (`campaign-planner measure`), each "
                        "labelled measured, scaled or analytic")
    p.add_argument("--estimate", choices=("typical", "cautious"), default="cautious",
                   help="figures taken on another card, and analytic ones, are planned on the "
                        "slow end of their range (cautious, the default) or on the calibrated "
                        "value (typical); stated in the plan's assumptions")
    p.add_argument("--corpus", metavar="FILE",
                   help="embedding presets: scan this corpus for exact counts, and write the "
                        "shard list (shards.toml, shards.jsonl) next to plan.toml")
    p.add_argument("--id-field", default="id", metavar="NAME",
                   help="with --corpus: the field holding stable ids (default: id)")
    p.add_argument("--text-field", default="text", metavar="NAME",
                   help="with --corpus: the field holding the text (default: text)")
    p.add_argument("--solver", choices=("fast", "cp-sat"),
                   help="packing: `fast` (plain Python) or `cp-sat` (OR-Tools, the `solve` "
                        "extra: a proven optimum or its bound); default: cp-sat with --out "
                        "when installed, else fast")
    p.add_argument("--time-limit", type=float, default=5.0, metavar="SECONDS",
                   help="cp-sat: seconds of search before it reports its best and its bound "
                        "(default: 5)")
    p.add_argument("--tui", action="store_true",
                   help="open the interactive terminal UI on the preset (what "
                        "`campaign-planner` with no arguments does in a terminal)")
    return p


def _created(text: str | None) -> datetime | None:
    if text is None:
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"not an ISO 8601 date-time: {text!r}", field="--created") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def _contact(name: str | None, email: str | None) -> Contact | None:
    from planner.order import make_contact

    return make_contact(name, email, name_field="--contact-name", email_field="--contact-email",
                        both="give both --contact-name and --contact-email")


def cmd_plan(argv: Sequence[str]) -> int:
    """Plan a preset headlessly; print the summary; export when --out is given."""
    args = plan_parser().parse_args(argv)
    if args.tui:
        return _tui(args)
    from planner.campaign import plan_campaign
    from planner.catalog import load_catalog
    from planner.export import write_exports
    from planner.loading import DEFAULT_PRESET, load_preset
    from planner.order import make_order

    contact = _contact(args.contact_name, args.contact_email)
    created = _created(args.created)
    preset, source = load_preset(args.preset or DEFAULT_PRESET)
    catalog = load_catalog(args.catalog)
    measurements = None
    if args.measurements:
        from planner.measurements import load_measurements

        measurements = load_measurements(args.measurements)
    layout = None
    if args.corpus:
        from planner.embed.layout import for_preset

        layout = for_preset(preset, source, args.corpus, args.id_field, args.text_field,
                            out=args.out, force=args.force, catalog=catalog,
                            measurements=measurements)
    plan = plan_campaign(preset, catalog, created=created, source=source, corpus=layout,
                         measurements=measurements, estimate=args.estimate,
                         solver=_solver(args), time_limit_s=args.time_limit)
    card = catalog.get(preset.campaign.card)
    order, order_warnings = make_order(preset, plan, card, contact)
    if order_warnings:
        plan = plan.model_copy(update={"warnings": [*plan.warnings, *order_warnings]})
    extra = layout.files() if layout is not None else []
    written = write_exports(args.out, plan, order, force=args.force, extra=extra) \
        if args.out else []
    if args.json:
        doc = plan.model_dump(mode="json", exclude={"runs", "assumptions"})
        doc["order"] = order.model_dump(mode="json")
        doc["written"] = [str(p) for p in written]
        print(json.dumps(doc, indent=2))
        return 0
    from planner.render import render

    print(render(plan))
    if written:
        print(f"\nWrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
    else:
        print("\nNothing written: pass --out DIR to export plan.toml and order.toml")
    return 0


def _solver(args: argparse.Namespace) -> Solver:
    """The packer asked for; by default the exact one for exports, when it is installed."""
    from planner.packing import have_cp_sat

    if args.time_limit <= 0 or args.time_limit != args.time_limit:
        raise InputError("must be a positive number of seconds", field="--time-limit")
    if args.solver == "cp-sat" and not have_cp_sat():
        raise InputError("cp-sat needs OR-Tools: pip install 'campaign-planner[solve]'",
                         field="--solver")
    if args.solver is not None:
        return args.solver  # type: ignore[no-any-return]
    return "cp-sat" if args.out and have_cp_sat() else "fast"


def _tui(args: argparse.Namespace) -> int:
    """Open the terminal UI; Textual loads only here, never for a headless plan."""
    import importlib

    _contact(args.contact_name, args.contact_email)
    ui = importlib.import_module("screens.app")
    return ui.run(args.preset, catalog=args.catalog,  # type: ignore[no-any-return]
                  created=_created(args.created), out_dir=args.out,
                  contact=(args.contact_name or "", args.contact_email or ""))


def cmd_presets(argv: Sequence[str]) -> int:
    """List shipped presets, one line each."""
    _Parser(prog="campaign-planner presets",
            description="List the presets shipped with campaign-planner.").parse_args(argv)
    from planner.loading import DEFAULT_PRESET, shipped_presets

    presets = shipped_presets()
    width = max(map(len, presets))
    for name, line in presets.items():
        mark = " (default)" if name == DEFAULT_PRESET else ""
        print(f"{name:<{width}}  {line}{mark}")
    return 0


def cmd_cards(argv: Sequence[str]) -> int:
    """List the card catalog."""
    p = _Parser(prog="campaign-planner cards", description="List the card catalog.")
    p.add_argument("--catalog", metavar="FILE", help="your own catalog, merged in")
    args = p.parse_args(argv)
    from planner.catalog import load_catalog

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
    _Parser(prog="campaign-planner schema",
            description="Print the JSON Schema of a preset file.").parse_args(argv)
    from planner.model import with_descriptions
    from planner.preset import Preset

    print(json.dumps(with_descriptions(Preset).model_json_schema(), indent=2))
    return 0


def _dispatch(argv: list[str]) -> Callable[[Sequence[str]], int] | None:
    if argv and argv[0] in COMMANDS:
        module, name = COMMANDS[argv[0]]
        mod = __import__(module, fromlist=[name])
        return getattr(mod, name)  # type: ignore[no-any-return]
    return None


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `campaign-planner`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args and sys.stdin.isatty() and sys.stdout.isatty():
        args = ["--tui"]
    try:
        command = _dispatch(args)
        if command is not None:
            return command(args[1:])
        return cmd_plan(args)
    except InputError as exc:
        # One line, whatever the input held: a line break in a value is shown escaped.
        message = str(exc).replace("\r", "\\r").replace("\n", "\\n")
        print(f"campaign-planner: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("campaign-planner: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


def console() -> int:
    """The `campaign-planner` command (and `python -m planner`): `main` in a process of
    its own.

    A headless plan validates only the planner's own models, for which no pydantic plugin
    is of use, and exits within a fraction of a second: that process skips pydantic's plugin
    search, unless PYDANTIC_DISABLE_PLUGINS is already set, and collects garbage rarely
    (`planner.lean`). Only the headless plan does: other commands and the terminal UI start
    processes (runs, measurements) that inherit the environment, and importing `planner` as
    a library changes nothing.
    """
    argv = sys.argv[1:]
    if argv and argv[0] not in COMMANDS and "--tui" not in argv:
        from planner.lean import lean_process

        lean_process()
    return main(argv)


if __name__ == "__main__":
    sys.exit(console())

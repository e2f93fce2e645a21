"""The `campaign-planner` command: the headless plan, and the dispatch to every other
command (each in a module of this package, imported when it runs).

Bad input of any kind ends with one line on stderr naming the file and the field, exit
code 2, and nothing written.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from planner.cli.args import Parser, add_what_if, contact_of, created_at, what_if
from planner.errors import InputError
from planner.spec.printable import shown

if TYPE_CHECKING:
    from planner.packing.pack import Solver
    from planner.spec.overrides import Overrides

Command = Callable[[Sequence[str]], int]
"""A subcommand's entry point: its arguments in, its exit code out."""

COMMANDS = ("presets", "cards", "schema", "measure", "trial", "compare", "advise", "check",
            "run", "status", "slurm", "corpus", "embed", "report", "replan", "sky", "dstack")
"""The subcommands; anything else is the plan command's arguments."""


def plan_parser() -> argparse.ArgumentParser:
    """Arguments of the headless plan command."""
    p = Parser(
        prog="campaign-planner",
        description="Plan what fits in a GPU rental window, from a preset, and export the "
                    "plan and the matching order.",
        epilog="Other commands (each takes --help): presets, cards, schema, measure, trial, "
               "compare, advise, check, corpus scan, corpus size, embed, run, status, replan, "
               "slurm, sky, dstack, report.",
    )
    p.add_argument("--preset", metavar="NAME|PATH",
                   help="shipped preset name (see `presets`) or a preset file; "
                        "default: ablation-7d")
    p.add_argument("--out", metavar="DIR", help="write DIR/plan.toml and DIR/order.toml")
    p.add_argument("--force", action="store_true", help="overwrite existing plan files")
    p.add_argument("--json", action="store_true", help="print the summary and the runs as JSON")
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
    p.add_argument("--use-cpu-step-times", action="store_true",
                   help="with --measurements taken on a CPU: plan with their step times "
                        "(by default a CPU measurement is a smoke test: its memory is used, "
                        "the step times are kept)")
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
    p.add_argument("--plan", metavar="PLAN",
                   help="open the terminal UI's Progress screen on a running plan.toml "
                        "(its journal in --workdir, by default the plan's folder)")
    p.add_argument("--workdir", metavar="DIR", help="with --plan: the run's working directory")
    add_what_if(p)
    return p


def cmd_plan(argv: Sequence[str]) -> int:
    """Plan a preset headlessly; print the summary; export when --out is given."""
    args = plan_parser().parse_args(argv)
    if args.plan:
        from screens.progress import run as progress

        return progress(args.plan, args.workdir)
    overrides = what_if(args)
    if args.tui:
        return _tui(args, overrides)
    from planner.campaign import plan_campaign
    from planner.planfile.export import write_exports
    from planner.planfile.order import make_order
    from planner.planfile.plan import with_overrides
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import DEFAULT_PRESET, load_preset
    from planner.spec.overrides import apply_overrides

    contact = contact_of(args.contact_name, args.contact_email)
    created = created_at(args.created)
    preset, source = load_preset(args.preset or DEFAULT_PRESET)
    catalog = load_catalog(args.catalog)
    preset, changed = apply_overrides(preset, overrides, catalog, source)
    measurements = None
    if args.measurements:
        from planner.figures.measurements import load_measurements

        measurements = load_measurements(args.measurements)
    layout = None
    if args.corpus:
        from planner.corpus.layout import for_preset

        layout = for_preset(preset, source, args.corpus, args.id_field, args.text_field,
                            out=args.out, force=args.force, catalog=catalog,
                            measurements=measurements)
    plan = plan_campaign(preset, catalog, created=created, source=source, corpus=layout,
                         measurements=measurements, estimate=args.estimate,
                         solver=_solver(args), time_limit_s=args.time_limit,
                         cpu_step_times=args.use_cpu_step_times)
    plan = with_overrides(plan, changed)
    card = catalog.get(preset.campaign.card)
    order, order_warnings = make_order(preset, plan, card, contact)
    if order_warnings:
        plan = plan.model_copy(update={"warnings": [*plan.warnings, *order_warnings]})
    extra = layout.files() if layout is not None else []
    written = write_exports(args.out, plan, order, force=args.force, extra=extra) \
        if args.out else []
    if args.json:
        # The summary and every run, as plan.toml lists them (the figures stay in the file).
        doc = plan.model_dump(mode="json", exclude={"assumptions"})
        doc["order"] = order.model_dump(mode="json")
        doc["overrides"] = plan.assumptions.overrides
        doc["written"] = [str(p) for p in written]
        print(json.dumps(doc, indent=2))
        return 0
    from planner.planning.render import render

    print(render(plan))
    if written:
        print(f"\nWrote {', '.join(map(str, written[:-1]))} and {written[-1]}")
    else:
        print("\nNothing written: pass --out DIR to export plan.toml and order.toml")
    return 0


def _solver(args: argparse.Namespace) -> Solver:
    """The packer asked for; by default the exact one for exports, when it is installed."""
    from planner.packing.pack import have_cp_sat

    if args.time_limit <= 0 or args.time_limit != args.time_limit:
        raise InputError("must be a positive number of seconds", field="--time-limit")
    if args.solver == "cp-sat" and not have_cp_sat():
        raise InputError("cp-sat needs OR-Tools: pip install 'campaign-planner[solve]'",
                         field="--solver")
    if args.solver is not None:
        return args.solver  # type: ignore[no-any-return]
    return "cp-sat" if args.out and have_cp_sat() else "fast"


def _tui(args: argparse.Namespace, overrides: Overrides) -> int:
    """Open the terminal UI; Textual loads only here, never for a headless plan."""
    from screens import app

    contact_of(args.contact_name, args.contact_email)
    return app.run(args.preset, catalog=args.catalog,
                   created=created_at(args.created), out_dir=args.out,
                   contact=(args.contact_name or "", args.contact_email or ""),
                   overrides=overrides)


def _command(name: str) -> Command:
    """A subcommand's entry point, imported only when that command runs: each loads what it
    needs (torch for `measure`, nothing heavy for the others)."""
    match name:
        case "presets" | "cards" | "schema":
            from planner.cli import listing
            return {"presets": listing.cmd_presets, "cards": listing.cmd_cards,
                    "schema": listing.cmd_schema}[name]
        case "measure":
            from planner.cli import measure
            return measure.main
        case "trial":
            from planner.cli import trial
            return trial.main
        case "compare":
            from planner.cli import compare
            return compare.main
        case "advise":
            from planner.cli import advise
            return advise.main
        case "check":
            from planner.cli import check
            return check.main
        case "run" | "status" | "slurm":
            from planner.cli import run
            return {"run": run.cmd_run, "status": run.cmd_status, "slurm": run.cmd_slurm}[name]
        case "corpus":
            from planner.cli import corpus
            return corpus.main
        case "report":
            from planner.cli import report
            return report.main
        case "replan":
            from planner.cli import replan
            return replan.main
        case "sky" | "dstack":
            from planner.cli import cloud
            return cloud.sky_main if name == "sky" else cloud.dstack_main
        case _:
            from planner.cli import embed
            return embed.main


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `campaign-planner`."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args and sys.stdin.isatty() and sys.stdout.isatty():
        args = ["--tui"]
    try:
        if args and args[0] in COMMANDS:
            return _command(args[0])(args[1:])
        return cmd_plan(args)
    except InputError as exc:
        # One line, whatever the input held: a line break or an escape in a value is
        # shown escaped (`printable`).
        message = shown(str(exc))
        print(f"campaign-planner: error: {message}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("campaign-planner: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        # The output could not be written (a full disk, a terminal gone): one line, and
        # what is still buffered is dropped so that the exit does not fail on it again.
        _drop_stdout()
        what = exc.filename if exc.filename is not None else "the output"
        print(f"campaign-planner: error: cannot write {what}: {exc.strerror or exc}",
              file=sys.stderr)
        return 1


def _drop_stdout() -> None:
    """Point standard output at the null device (after a write to it failed)."""
    try:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


GC_THRESHOLD = 1_000_000
"""New container objects between two collections of the youngest generation."""


def console() -> int:
    """The `campaign-planner` command (and `python -m planner`).

    A command builds a plan's objects and keeps them to its end; the collector's default
    pass every 700 new containers walks them again and again and frees nothing: planning a
    6,000-run matrix took 0.6 s more CPU with it (`benchmarks/bench_scale.py`). Here, at
    the entry point, collections are made rarer; a program importing the planner keeps its
    own setting."""
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(gen0, GC_THRESHOLD), gen1, gen2)
    return main(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(console())

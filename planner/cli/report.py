"""`campaign-planner report`: a plan (or a preset, planned on the spot) as one HTML page
to open offline, or its Gantt as an SVG or PNG; the drawing is `planner.report`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from planner.errors import InputError


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner report`."""
    from planner.cli.args import Parser, created_at

    p = Parser(prog="campaign-planner report",
               description="Write the plan as a picture: one self-contained HTML file (the "
                           "schedule on the cards, memory per variant, hours and money, what "
                           "does not fit; with --workdir what actually ran) that opens "
                           "offline, or the schedule alone as an SVG or PNG.")
    p.add_argument("plan", metavar="PLAN", nargs="?",
                   help="plan.toml (or the folder holding it)")
    p.add_argument("--from-preset", metavar="NAME|PATH",
                   help="plan this preset and report it, without exporting it first")
    p.add_argument("--workdir", metavar="DIR",
                   help="working directory of `run`: actual against planned from its journal, "
                        "and the hour it is now")
    p.add_argument("--out", metavar="FILE",
                   help="the report's file (default: report.html, .svg or .png beside the "
                        "plan, or in the current folder with --from-preset)")
    p.add_argument("--format", choices=("html", "svg", "png"),
                   help="html (default, or from --out's name), or svg / png: the schedule alone")
    p.add_argument("--force", action="store_true", help="overwrite an existing report")
    p.add_argument("--catalog", metavar="FILE", help="with --from-preset: your own card catalog")
    p.add_argument("--created", metavar="ISO8601",
                   help="with --from-preset: timestamp recorded in the plan (default: now)")
    args = p.parse_args(argv)
    from planner.report.write import format_of, need_library, render, write_report
    from planner.tomlio import refuse_existing

    fmt = format_of(args.out, args.format)
    need_library(fmt)
    if (args.plan is None) == (args.from_preset is None):
        raise InputError("give a plan (PLAN) or --from-preset, one of them", field="PLAN")
    if args.plan is not None:
        from planner.run.prepare import load_plan

        plan, _ = load_plan(args.plan)
        given = Path(args.plan).expanduser()  # as given: a relative folder is shown relative
        folder = given if given.is_dir() else given.parent
    else:
        from planner.campaign import plan_campaign
        from planner.spec.catalog import load_catalog
        from planner.spec.loading import load_preset

        preset, source = load_preset(args.from_preset)
        plan = plan_campaign(preset, load_catalog(args.catalog),
                             created=created_at(args.created), source=source)
        folder = Path()
    actual = None
    if args.workdir is not None:
        from planner.report.actual import load_actual

        wd = Path(args.workdir).expanduser()
        if not wd.is_dir():
            raise InputError("is not a folder", file=wd, field="--workdir")
        actual = load_actual(plan, wd)
    out = Path(args.out) if args.out else folder / f"report.{fmt}"
    refuse_existing([out], force=args.force)
    written = write_report(out, render(plan, fmt, actual), force=args.force)
    print(f"Wrote {written}")
    return 0

"""`campaign-planner report`: a plan (or a preset, planned on the spot) as one HTML page
to open offline, or its Gantt as an SVG or PNG; the drawing is `planner.report`."""

from __future__ import annotations

from argparse import Namespace
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.planfile.plan import Plan
    from planner.report.actual import Actual


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner report`."""
    from planner.cli.args import Parser, add_what_if

    p = Parser(prog="campaign-planner report",
               description="Write the plan as a picture: one self-contained HTML file (the "
                           "schedule on the cards, memory per variant, hours and money, what "
                           "does not fit; with the journal of `run`, what actually ran) that "
                           "opens offline, or the schedule alone as an SVG or PNG.")
    p.add_argument("plan", metavar="PLAN", nargs="?",
                   help="plan.toml (or the folder holding it)")
    p.add_argument("--from-preset", metavar="NAME|PATH",
                   help="plan this preset and report it, without exporting it first")
    p.add_argument("--workdir", metavar="DIR",
                   help="working directory of `run`: actual against planned from its journal, "
                        "and the hour it is now (default: the folder holding the plan, when "
                        "`run` has journalled there, as `status` reads it)")
    p.add_argument("--out", metavar="FILE",
                   help="the report's file (default: report.html, .svg or .png beside the "
                        "plan, or in the current folder with --from-preset)")
    p.add_argument("--format", choices=("html", "svg", "png"),
                   help="html (default, or from --out's name), or svg / png: the schedule alone")
    p.add_argument("--force", action="store_true", help="overwrite an existing report")
    p.add_argument("--catalog", metavar="FILE", help="with --from-preset: your own card catalog")
    p.add_argument("--created", metavar="ISO8601",
                   help="with --from-preset: timestamp recorded in the plan (default: now)")
    add_what_if(p, note="with --from-preset, as the plan command takes them")
    args = p.parse_args(argv)
    from planner.report.write import format_of, need_library, render, write_report
    from planner.tomlio import refuse_existing

    fmt = format_of(args.out, args.format)
    need_library(fmt)
    if (args.plan is None) == (args.from_preset is None):
        raise InputError("give a plan (PLAN) or --from-preset, one of them", field="PLAN")
    if args.plan is not None:
        _no_what_if(args)
        from planner.run.prepare import load_plan

        plan, plan_path = load_plan(args.plan)
        given = Path(args.plan).expanduser()  # as given: a relative folder is shown relative
        folder = given if given.is_dir() else given.parent
    else:
        plan = _from_preset(args)
        plan_path, folder = None, Path()
    actual, journal = _actual(plan, plan_path, args.workdir)
    out = Path(args.out) if args.out else folder / f"report.{fmt}"
    refuse_existing([out], force=args.force)
    written = write_report(out, render(plan, fmt, actual), force=args.force)
    print(f"Wrote {written}" + (f" (what ran, from {journal})" if journal else ""))
    return 0


def _no_what_if(args: Namespace) -> None:
    """A plan.toml is reported as it stands: a what-if flag beside it is refused."""
    for flag in ("card", "cards", "days", "hours", "seeds"):
        if getattr(args, flag) is not None:
            raise InputError("changes a preset: give it with --from-preset (a plan.toml is "
                             "reported as it was planned)", field=f"--{flag}")


def _from_preset(args: Namespace) -> Plan:
    """The preset planned on the spot, with the command line's what-if changes applied
    and named in its assumptions, as the plan command plans it."""
    from planner.campaign import plan_campaign
    from planner.cli.args import created_at, what_if
    from planner.planfile.plan import with_overrides
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset
    from planner.spec.overrides import apply_overrides

    overrides = what_if(args)
    preset, source = load_preset(args.from_preset)
    catalog = load_catalog(args.catalog)
    preset, changed = apply_overrides(preset, overrides, catalog, source)
    plan = plan_campaign(preset, catalog, created=created_at(args.created), source=source)
    return with_overrides(plan, changed)


def _actual(plan: Plan, plan_path: Path | None, workdir: str | None
            ) -> tuple[Actual | None, Path | None]:
    """What ran, and the journal it was read from: from `--workdir`, else from the
    journal in the folder holding the plan when there is one (where `run` and `status`
    keep it)."""
    from planner.report.actual import load_actual
    from planner.run.journal import Workspace

    if workdir is not None:
        wd = Path(workdir).expanduser()
        if not wd.is_dir():
            raise InputError("is not a folder", file=wd, field="--workdir")
        actual = load_actual(plan, wd)
        return actual, Workspace(wd.absolute()).journal if actual.started else None
    if plan_path is None:
        return None, None
    from planner.run.prepare import workspace

    ws = workspace(plan_path, None)
    if not ws.journal.exists():
        return None, None
    return load_actual(plan, ws.workdir), ws.journal

"""`campaign-planner run`, `status` and `slurm`: running a plan and following it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from planner.cli.args import Parser
from planner.planfile.plan import Plan, Run
from planner.run import prepare
from planner.run.journal import History, Workspace

WORKDIR_HELP = ("folder the plan's relative paths (checkpoints, resume paths, exports) "
                "resolve against, and where campaign-run/ (journal, logs) is kept; "
                "default: the folder holding the plan")


def run_parser() -> Parser:
    """Arguments of `campaign-planner run`."""
    p = Parser(
        prog="campaign-planner run",
        description="Run a plan's runs on this machine's cards, in plan order, journalling "
                    "every start, checkpoint and exit. Run it again after a crash, a reboot or "
                    "a kill: finished runs are kept, interrupted ones resume from their "
                    "latest checkpoint.")
    p.add_argument("plan", metavar="PLAN", help="plan.toml (or the folder holding it)")
    p.add_argument("--cards", metavar="LIST",
                   help="card indices to use, e.g. 0,1,2,3 or 0-3; default: 0 to the "
                        "plan's card count less one")
    p.add_argument("--dry-run", action="store_true",
                   help="print what would start where; start nothing, write nothing")
    p.add_argument("--workdir", metavar="DIR", help=WORKDIR_HELP)
    p.add_argument("--accept-changed-plan", action="store_true",
                   help="run a plan that differs from the one this journal began with")
    p.add_argument("--retry-failed", action="store_true",
                   help="give runs marked failed a fresh set of retries")
    p.add_argument("--window-start", metavar="ISO8601",
                   help="when the rental window began (default: the first session's start "
                        "less the plan's stack-check hours); used by `status`")
    p.add_argument("--grace", type=float, default=30.0, metavar="SECONDS",
                   help="on Ctrl-C, how long runs get to exit after SIGTERM before "
                        "SIGKILL (default 30)")
    p.add_argument("--poll", type=float, default=1.0, metavar="SECONDS",
                   help="how often runs are checked (default 1)")
    p.add_argument("--progress-every", type=float, default=60.0, metavar="SECONDS",
                   help="journal the step a run reports (CAMPAIGN_PROGRESS) at most this "
                        "often per run (default 60)")
    p.add_argument("--only", metavar="IDS",
                   help="run only these runs (comma-separated ids; an evaluation with its "
                        "run): one machine of several that each run part of the plan")
    return p


def dry_run(plan: Plan, plan_path: Path, ws: Workspace, hist: History,
            cards: list[int], present: set[str] | None = None) -> str:
    """What `run` would do now, in words; `present` as for `prepare.check`."""
    from planner.run.live import current
    from planner.run.observe import with_done_records
    from planner.run.once import folders_present, lock_held
    from planner.run.status import executor_alive, groups_of, project
    from planner.run.status_render import span
    from planner.spec.printable import shown

    journalled = current(plan, hist)
    if present is None:  # where a run's lock can be
        present = folders_present(ws.workdir, plan.runs)
    # The same records `run` reads once it holds each run's lock: a run finished from
    # another working directory, plan copy or SLURM task is not run again.
    recs = with_done_records(plan.runs, journalled, ws.workdir, present)
    groups = groups_of(plan.runs, recs)
    counted = set(groups.values())
    elsewhere = {r.id for r in plan.runs
                 if groups[r.id] == "done" and journalled[r.id].state != "finished"} \
        if "done" in counted else set()
    proj = project(plan, recs, groups, 0.0, len(cards), pace=1.0)
    lines = ["Dry run: nothing is started and nothing is written.",
             f"Plan      {plan_path} ({plan.campaign.id}, {len(plan.runs)} runs)",
             f"Workdir   {ws.workdir}",
             f"Journal   {f'{hist.events} events' if hist.events else 'none yet'} "
             f"({ws.journal})",
             f"Cards     {','.join(map(str, cards))} (each run gets CUDA_VISIBLE_DEVICES)"]
    if executor_alive(ws):
        lines.append("Executor  one is running here now: `run` would be refused until it ends")
    lines.append("")
    order = {r.id: i for i, r in enumerate(plan.runs)}
    slots = sorted((v[0], order[k], v[2]) for k, v in proj.fits.items() if v is not None)
    names = [str(c) for c in cards]
    running = "running" in counted
    # The cards and start of a slot, worded once: a large plan's runs share a few.
    worded: dict[tuple[float, tuple[int, ...]], str] = {}
    how = {False: f"\n  {'':<22} exec: ", True: f"\n  {'':<22} shell: "}
    for start, i, on in slots:
        run = plan.runs[i]
        rid = run.id
        head = worded.get((start, on))
        if head is None:
            where = ",".join(names[c] for c in on)
            when = "now" if start < 1e-9 else f"in {span(start * 3600)}"
            head = worded[(start, on)] = f"  {when:<22} card {where:<4} "
        if running and groups[rid] == "running":
            what = "running now: adopted, not restarted"
        elif present and run.checkpoint_dir in present and lock_held(
                os.path.join(ws.workdir, run.checkpoint_dir, f"{rid}.lock")):
            what = "running elsewhere: waits for its lock, then runs only if not done"
        elif run.kind == "train" and (present or not _inside(run)) \
                and _resumable(run, present, ws.workdir):
            what = f"resumes from {run.resume}"
        else:
            what = "fresh" if not run.depends_on else f"after {run.depends_on}"
        # A run's two lines as one text: the lines are joined by line breaks in the end.
        # A script's line breaks and escapes shown as such: one line, nothing the terminal
        # would act on (`printable`).
        lines.append(f"{head}{rid}  ({what}){how[run.shell]}{shown(run.command)}")
    for name in ("done", "failed", "blocked"):
        ids = [r.id for r in plan.runs if groups[r.id] == name and r.id not in elsewhere] \
            if name in counted else []
        if ids:
            lines.append(f"  {name} (not started): " + ", ".join(ids))
    if elsewhere:
        lines.append("  done elsewhere (their done records say so; not run again): "
                     + ", ".join(r.id for r in plan.runs if r.id in elsewhere))
    late = [rid for rid, v in proj.fits.items() if v is None]
    if late:
        lines.append("  would not end inside the usable window at planned speed: "
                     + ", ".join(late))
    return "\n".join(lines)


def _inside(run: Run) -> bool:
    """Whether the run's resume path lies inside its checkpoint folder."""
    return run.resume.startswith(run.checkpoint_dir.rstrip("/") + "/")


def _resumable(run: Run, present: set[str], workdir: Path) -> bool:
    """Whether the run's resume path is there (never, inside a folder that is not)."""
    return (run.checkpoint_dir in present or not _inside(run)) \
        and os.path.exists(os.path.join(workdir, run.resume))


def cmd_run(argv: Sequence[str]) -> int:
    """Run a plan (or show, with --dry-run, what would run)."""
    args = run_parser().parse_args(argv)
    prepare.check_times(args.poll, args.grace)
    if not 0 <= args.progress_every <= prepare.MAX_POLL_S:  # nan fails too
        from planner.errors import InputError

        raise InputError(f"must be between 0 and {prepare.MAX_POLL_S:g} seconds",
                         field="--progress-every")
    plan, plan_path = _load(args.plan)
    if args.only is not None:
        plan = prepare.only(plan, args.only)
    cards = prepare.parse_cards(args.cards, plan)
    window_start = prepare.parse_time(args.window_start)
    ws = prepare.workspace(plan_path, args.workdir)
    hist = prepare.history(ws)
    if args.dry_run:
        from planner.run.once import folders_present

        # One listing of the runs' folders, for the checks and the dry run alike.
        present = folders_present(ws.workdir, plan.runs)
        prepare.check(plan, plan_path, ws, hist, args.accept_changed_plan, present)
        print(dry_run(plan, plan_path, ws, hist, cards, present))
        return 0
    prepare.check(plan, plan_path, ws, hist, args.accept_changed_plan)
    from planner.run.executor import Executor
    from planner.run.journal import Journal

    with prepare.locked(ws):
        hist = prepare.history(ws)  # again, now that no other executor can write it
        changes = prepare.check(plan, plan_path, ws, hist, args.accept_changed_plan)
        journal = Journal(ws.journal)
        try:
            prepare.begin(journal, hist, plan, plan_path, changes, cards, window_start)
            if args.retry_failed:
                for rid, rec in hist.runs.items():
                    if rec.state == "failed":
                        hist.apply(journal.append("reset", run=rid))
            executor = Executor(plan, plan_path, ws, journal, hist, cards, poll=args.poll,
                                grace=args.grace, progress_every=args.progress_every)
            if changes:
                executor.say(f"plan changed, accepted: {changes}")
            return executor.run()
        finally:
            journal.close()


def _load(path: str) -> tuple[Plan, Path]:
    """The plan and its absolute path (`prepare.load_plan`)."""
    return prepare.load_plan(path)


def cmd_status(argv: Sequence[str]) -> int:
    """Show where a plan's run stands."""
    p = Parser(prog="campaign-planner status",
               description="Show each run's state (done, running, pending, failed, "
                            "blocked), actual against planned times, and the projected end "
                            "against the window's end. Reads the journal; writes nothing.")
    p.add_argument("plan", metavar="PLAN", help="plan.toml (or the folder holding it)")
    p.add_argument("--workdir", metavar="DIR", help=WORKDIR_HELP)
    p.add_argument("--json", action="store_true", help="print the status as JSON")
    p.add_argument("--watch", nargs="?", type=float, const=5.0, metavar="SECONDS",
                   help="redraw the status in place every SECONDS (default 5) until Ctrl-C")
    args = p.parse_args(argv)
    from planner.run.status import summarize, text

    plan, plan_path = _load(args.plan)
    ws = prepare.workspace(plan_path, args.workdir)

    def show() -> str:
        hist = prepare.history(ws)
        if not args.json:
            return text(plan, hist, ws)
        s = summarize(plan, hist, ws)
        return json.dumps(s, indent=2)

    if args.watch is not None:
        if not 0.1 <= args.watch <= prepare.MAX_POLL_S:  # nan fails too
            from planner.errors import InputError

            raise InputError(f"must be between 0.1 and {prepare.MAX_POLL_S:g} seconds",
                             field="--watch")
        from planner.cli.watch import watch

        return watch(show, args.watch)
    print(show())
    return 0


def cmd_slurm(argv: Sequence[str]) -> int:
    """Export a plan as SLURM job arrays."""
    from planner.run import slurm_options

    p = Parser(prog="campaign-planner slurm",
               description="Export a plan as SLURM job arrays for a campaign over several "
                            "machines: one array task per run, with the manifest check, "
                            "resume from the latest checkpoint and retries of `run`.")
    p.add_argument("plan", metavar="PLAN", help="plan.toml (or the folder holding it)")
    p.add_argument("--out", metavar="DIR", required=True,
                   help="folder for campaign.sbatch, robustness.sbatch, submit.sh and the "
                        "runs' manifests; on a filesystem every node sees")
    p.add_argument("--force", action="store_true", help="overwrite existing files")
    p.add_argument("--workdir", metavar="DIR",
                   help="the plan's folder as every node sees it: the plan's relative paths "
                        "(checkpoints, resume paths, exports) resolve against it, "
                        "campaign-run/ (logs, traces) is kept in it, and the tasks read the "
                        "plan, and an export made inside the plan's folder, under it; "
                        "default: the folder holding the plan")
    p.add_argument("--partition", metavar="NAME", help="SLURM partition")
    p.add_argument("--time", metavar="D-HH:MM:SS",
                   help="time limit of every task; default: each array's own, its longest "
                        "run's planned time plus 20%% (at least 10 minutes), runs of "
                        "similar length sharing an array; a task reaching it is requeued "
                        "and resumes")
    p.add_argument("--throttle", type=int, metavar="N",
                   help="at most N tasks of each array at once (default: the plan's cards "
                        "over a task's cards)")
    p.add_argument("--cpus-per-task", type=int, metavar="N",
                   help="CPUs of one task (default per card: the catalog's host CPUs for "
                        f"the plan's card, else {slurm_options.CPUS_PER_CARD})")
    p.add_argument("--mem", metavar="SIZE",
                   help="host memory of one task, e.g. 64G (default per card: 3/4 of the "
                        "catalog's host memory for the plan's card, else "
                        f"{slurm_options.MEM_PER_CARD_GIB}G)")
    p.add_argument("--export", metavar="LIST",
                   help="variables of this shell the tasks get, comma-separated; +LIST adds "
                        "to the default, ALL passes everything, NONE nothing (default: "
                        f"{', '.join(slurm_options.EXPORT_DEFAULT)}; SLURM adds its own "
                        "SLURM_*)")
    args = p.parse_args(argv)
    from planner.errors import InputError
    from planner.run.slurm import export

    if args.time is not None:
        slurm_options.time_seconds(args.time)
    slurm_options.cpus(args.cpus_per_task, 1)
    slurm_options.mem(args.mem, 1)
    slurm_options.export_list(args.export)
    if args.throttle is not None and not 1 <= args.throttle <= 1_000_000:
        raise InputError("must be between 1 and 1000000", field="--throttle")
    if args.partition is not None and not re.fullmatch(r"[A-Za-z0-9_.,-]{1,200}",
                                                       args.partition):
        raise InputError("expected partition names (letters, digits, `_`, `.`, `-`, "
                         "comma-separated)", field="--partition")
    plan, plan_path = _load(args.plan)
    ws = prepare.workspace(plan_path, args.workdir)
    out = Path(args.out).expanduser().absolute()
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", file=out, field="--out")
    written = export(plan, plan_path, out, ws.workdir, force=args.force,
                     partition=args.partition, time_limit=args.time, throttle=args.throttle,
                     cpus_per_task=args.cpus_per_task, mem=args.mem,
                     export_vars=args.export)
    print(f"Wrote {', '.join(str(w) for w in written)} and {len(plan.runs)} manifests")
    print(f"Submit with: {out / 'submit.sh'}   (follow with: squeue --me; sacct -j JOBID)")
    return 0

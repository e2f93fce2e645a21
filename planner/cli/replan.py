"""`campaign-planner replan`: a new revision of a running plan from what actually happened."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path

from planner.cli.args import Parser
from planner.cli.run import WORKDIR_HELP
from planner.run import prepare


def parser() -> Parser:
    """Arguments of `campaign-planner replan`."""
    p = Parser(prog="campaign-planner replan",
               description="Rebuild the schedule from the journal: finished runs stay, each "
                           "variant's step time is the observed one, and what is left is "
                           "packed into the rest of the window with the plan's objective. "
                           "Writes a new plan revision; order.toml is unchanged.")
    p.add_argument("plan", metavar="PLAN", help="plan.toml (or the folder holding it)")
    p.add_argument("--workdir", metavar="DIR", help=WORKDIR_HELP)
    p.add_argument("--out", metavar="DIR",
                   help="folder for the revision's plan.toml (default: revision-N beside "
                        "the plan)")
    p.add_argument("--at", metavar="ISO8601",
                   help="replan as of this moment (default: now); journal events after it "
                        "are not read")
    p.add_argument("--force", action="store_true", help="overwrite an existing plan.toml")
    p.add_argument("--json", action="store_true", help="print the difference as JSON")
    return p


def main(argv: Sequence[str]) -> int:
    """Write a revision of PLAN; print what changed."""
    args = parser().parse_args(argv)
    from planner.planfile.export import plan_files
    from planner.planfile.replace import replace_together
    from planner.run.journal import fold, read_events
    from planner.run.replan import check_journal, replan
    from planner.run.replan_text import render
    from planner.run.slurm_trace import with_traces

    at = prepare.parse_time(args.at, "--at")
    plan, plan_path = prepare.load_plan(args.plan)
    ws = prepare.workspace(plan_path, args.workdir)
    now = time.time() if at is None else at
    events = read_events(ws.journal)
    whole = with_traces(plan, fold(events), ws.workdir)
    check_journal(plan, whole, ws)
    hist = fold([e for e in events if e["t"] <= now])
    # The window and the campaign are the journal's, whenever `--at` falls.
    hist.plan, hist.window_start = hist.plan or whole.plan, whole.window_start
    hist.cards = hist.cards or whole.cards
    result = replan(plan, hist, ws, now)
    rev = result.plan
    out = Path(args.out).expanduser() if args.out else plan_path.parent / f"revision-{rev.revision}"
    replace_together(out, plan_files(rev, out), force=args.force)
    if args.json:
        print(json.dumps({**result.as_json(), "plan": str(out / "plan.toml")}, indent=2))
    else:
        print(render(result, out / "plan.toml", ws.workdir))
    return 0

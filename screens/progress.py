"""The Progress screen: a running campaign against the clock, and its replan.

Opened by `campaign-planner --plan plan.toml [--workdir DIR]`. It reads the journal (never
writes it) every few seconds, and follows the plan that runs: once `run` switched to a
revision, the screen shows that revision and says so. `r` shows what a replan would change
and, once confirmed, writes the revision beside the plan (`revision-N/plan.toml`), as
`replan` does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import ClassVar

from textual.app import App, ComposeResult
from textual.binding import Binding
from textual.widgets import Footer, Static

from planner.errors import InputError
from planner.planfile.export import plan_files
from planner.planfile.plan import Plan
from planner.planfile.replace import replace_together
from planner.run.journal import History, Workspace, fold, read_events
from planner.run.replan import Replan, replan
from screens.confirm import Confirm
from screens.progress_view import following, headline, rate_lines, timeline, view

LEGEND = "█ done  ▓ running  ░ planned  │ now  ┆ window's end"


class ProgressApp(App[None]):
    """A running plan's progress, refreshed from its journal."""

    TITLE = "campaign-planner · progress"
    BINDINGS: ClassVar = [Binding("r", "replan", "Replan"), Binding("q", "quit", "Quit")]
    DEFAULT_CSS = """
    #head { height: auto; padding: 0 1; text-style: bold; }
    #follow { height: auto; padding: 0 1; color: $accent; }
    #timeline { height: auto; padding: 0 1; margin-top: 1; }
    #legend { height: auto; padding: 0 1; color: $text-muted; }
    #rates { height: auto; padding: 0 1; margin-top: 1; }
    #said { height: auto; padding: 0 1; margin-top: 1; color: $warning; }
    """

    def __init__(self, plan: Plan, plan_path: Path, ws: Workspace, *,
                 clock: Callable[[], float] = time.time, refresh_s: float = 5.0) -> None:
        super().__init__()
        self.plan, self.plan_path, self.ws = plan, plan_path, ws
        self.clock, self.refresh_s = clock, refresh_s

    def compose(self) -> ComposeResult:
        yield Static(id="head", markup=False)
        yield Static(id="follow", markup=False)
        yield Static(id="timeline", markup=False)
        yield Static(LEGEND, id="legend", markup=False)
        yield Static(id="rates", markup=False)
        yield Static(id="said", markup=False)
        yield Footer()

    def on_mount(self) -> None:
        self.redraw()
        self.set_interval(self.refresh_s, self.redraw)

    def history(self) -> History:
        return fold(read_events(self.ws.journal))

    def redraw(self) -> None:
        """Read the journal again and draw what it says, on the plan it runs now."""
        try:
            hist = self.history()
            follow = following(self.plan, self.plan_path, hist, self.ws)
            self.plan, self.plan_path = follow.plan, follow.path
            v = view(self.plan, hist, self.ws, self.clock())
        except InputError as exc:
            self.query_one("#said", Static).update(str(exc))
            return
        follow_line = self.query_one("#follow", Static)
        follow_line.update(follow.note)
        follow_line.display = bool(follow.note)
        width = max(self.size.width - 2, 40)
        self.query_one("#head", Static).update("\n".join(headline(v)))
        self.query_one("#timeline", Static).update("\n".join(timeline(v, width)))
        late = (f"\nAt risk: {len(v.late)} run(s) no longer fit the window: "
                + ", ".join(v.late[:3]) + (" …" if len(v.late) > 3 else "")) if v.late else ""
        self.query_one("#rates", Static).update(
            "Observed step times\n" + "\n".join(rate_lines(v)) + late)

    def action_replan(self) -> None:
        """Show the replan's difference; write the revision once confirmed."""
        try:
            result = replan(self.plan, self.history(), self.ws, self.clock())
        except InputError as exc:
            self.query_one("#said", Static).update(str(exc))
            return
        out = self.plan_path.parent / f"revision-{result.plan.revision}"
        self.push_screen(Confirm(difference(result) + f"\n\nWrite {out / 'plan.toml'}?",
                                 yes="Write"),
                         lambda yes: self.write(result, out) if yes else None)

    def write(self, result: Replan, out: Path) -> None:
        try:
            replace_together(out, plan_files(result.plan, out), force=False)
        except InputError as exc:
            self.query_one("#said", Static).update(str(exc))
            return
        self.query_one("#said", Static).update(
            f"Wrote {out / 'plan.toml'}; run it with campaign-planner run "
            f"{out / 'plan.toml'} --workdir {self.ws.workdir}")


def difference(r: Replan) -> str:
    """The replan in a few lines."""
    lines = [f"Revision {r.plan.revision} at hour {r.now_h:.3g}: {len(r.finished)} finished, "
             f"{len(r.running)} running, {len(r.remaining)} re-timed",
             f"Projected end hour {r.projected_end_h:.3g} (window: hour "
             f"{r.plan.campaign.usable_until_h:.3g})"]
    lines += [f"No longer fits: {d.id}" for d in r.dropped[:4]]
    if len(r.dropped) > 4:
        lines.append(f"… and {len(r.dropped) - 4} more no longer fit")
    if r.added:
        lines.append("Now fits too: " + ", ".join(r.added[:4]))
    return "\n".join(lines)


def run(plan_path: str, workdir: str | None) -> int:
    """Open the Progress screen on a plan."""
    from planner.run import prepare

    plan, path = prepare.load_plan(plan_path)
    ProgressApp(plan, path, prepare.workspace(path, workdir)).run()
    return 0

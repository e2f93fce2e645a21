"""The Progress screen (`campaign-planner --plan`): a running campaign's timeline, the now
line, the projected end against the window's end, observed step times, and the replan key
that shows the difference and writes the revision once confirmed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from planner.planning.export import read_plan
from planner.run.journal import Workspace, fold, read_events
from screens.progress import ProgressApp
from screens.progress_view import DONE, NOW, PLANNED, RUNNING, timeline, view
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h

COMMAND = "train --run-id {run_id} --seed {seed} --steps {steps} {overrides}"
SMALL = (80, 24)


def campaign(tmp_path: Path) -> tuple[Path, Any]:
    """Two cards: seed 0 done, the slow variant's seed 1 half-way at twice its step time."""
    plan_path = h.make_plan(tmp_path / "w", preset(cards=2, window_s=40.0, command=COMMAND))
    plan = read_plan(plan_path)
    cid = plan.campaign.id
    j = JournalWriter(plan, plan_path.parent)
    j.run(f"{cid}-baseline-s0", 0.0, 0.3, card=0)
    j.run(f"{cid}-slow-s0", 0.0, 0.6, card=1)
    j.run(f"{cid}-baseline-s1", 3.1, 0.3, card=0)
    j.run(f"{cid}-slow-s1", 6.1, 0.6, card=1, until=5, alive=True)
    return plan_path, plan


def app(plan_path: Path, plan: Any) -> ProgressApp:
    return ProgressApp(plan, plan_path, Workspace(plan_path.parent), clock=lambda: T0 + 9.2,
                       refresh_s=3600)


def test_timeline_text(tmp_path: Path) -> None:
    plan_path, plan = campaign(tmp_path)
    ws = Workspace(plan_path.parent)
    v = view(plan, fold(read_events(ws.journal)), ws, T0 + 9.2)
    lines = timeline(v, 60)
    assert len(lines) == 2 and all(NOW in line for line in lines)
    assert DONE in lines[0] and RUNNING in lines[1] and PLANNED in "".join(lines)
    assert v.counts == {"done": 3, "running": 1, "pending": 2, "failed": 0}
    assert abs(v.observed["slow"].ratio - 2.0) < 1e-3


def test_progress_small(snap_compare: Any, tmp_path: Path) -> None:
    """80×24: two cards' timeline, the now line, the projected end, the step times."""
    plan_path, plan = campaign(tmp_path)
    assert snap_compare(app(plan_path, plan), terminal_size=SMALL)


async def test_replan_key_shows_the_difference_and_writes(tmp_path: Path) -> None:
    plan_path, plan = campaign(tmp_path)
    a = app(plan_path, plan)
    async with a.run_test(size=SMALL) as pilot:
        await pilot.press("r")
        await pilot.pause()
        question = str(a.screen.query_one("#question").render())
        assert "Revision 1" in question and "Write" in question
        await pilot.press("n")
        await pilot.pause()
        assert not (plan_path.parent / "revision-1").exists()
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
    rev = read_plan(plan_path.parent / "revision-1" / "plan.toml")
    assert rev.revision == 1 and rev.parent == plan.campaign.id


def test_cli_opens_it(tmp_path: Path) -> None:
    r = h.cli("--plan", str(tmp_path / "none.toml"))
    assert r.returncode == 2 and "none.toml" in r.stderr and "Traceback" not in r.stderr



LARGE = (120, 36)


def busy_campaign(tmp_path: Path) -> tuple[Path, Any]:
    """Three cards, seeds 0-3 in a 12 s window; the slow variant runs at twice its step
    time, so by second 7 the last runs no longer fit."""
    plan_path = h.make_plan(tmp_path / "w", preset(cards=3, seeds=(0, 1, 2, 3),
                                                   window_s=12.0, command=COMMAND))
    plan = read_plan(plan_path)
    j = JournalWriter(plan, plan_path.parent)
    free = [0.0] * plan.campaign.cards
    for run in plan.runs:  # each card's runs in plan order, as the executor starts them
        card = run.card[0]
        start = max(run.start_h * 3600, free[card])
        if start >= 7.0:
            continue
        step_s = 0.6 if run.variant == "slow" else 0.3
        reached = int((7.0 - start) / step_s)
        alive = reached < run.steps
        end = j.run(run.id, start, step_s, card=card, alive=alive,
                    until=reached if alive else None)
        free[card] = float("inf") if alive else end  # a card runs one run at a time
    return plan_path, plan


def test_progress_large(snap_compare: Any, tmp_path: Path) -> None:
    """120×36: three cards, done, running and planned runs, the now line, the window's
    end, runs at risk and the observed step times."""
    plan_path, plan = busy_campaign(tmp_path)
    a = ProgressApp(plan, plan_path, Workspace(plan_path.parent), clock=lambda: T0 + 7.0,
                    refresh_s=3600)
    assert snap_compare(a, terminal_size=LARGE)

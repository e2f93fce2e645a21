"""The Progress screen (`campaign-planner --plan`): a running campaign's timeline, the now
line, the projected end against the window's end, observed step times, and the replan key
that shows the difference and writes the revision once confirmed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from planner.planfile.export import read_plan
from planner.planfile.plan import plan_id
from planner.run.journal import Workspace, fold, read_events
from planner.run.params import plan_fingerprint, run_fingerprint, run_parameters
from planner.run.replan import replan
from screens.progress import ProgressApp
from screens.progress_view import (
    DONE,
    NOW,
    PLANNED,
    RUNNING,
    Bar,
    View,
    following,
    headline,
    timeline,
    view,
)
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


def revised_campaign(tmp_path: Path, *, finished: bool = False) -> tuple[Path, Any, Any]:
    """`busy_campaign`, replanned at second 7 (the slow variant's seed 3 no longer fits,
    and is dropped), and `run` switched to revision 1 at 7.1 s; with `finished`, the
    revision's runs then ran to their end as it placed them: (plan path, the plan the
    screen was opened on, the revision)."""
    plan_path, plan = busy_campaign(tmp_path)
    ws = Workspace(plan_path.parent)
    hist = fold(read_events(ws.journal))
    rev = replan(plan, hist, ws, T0 + 7.0).plan
    out = plan_path.parent / "revision-1" / "plan.toml"
    out.parent.mkdir()
    h.write_plan(rev, out)
    lines = [  # what `run revision-1/plan.toml` journals first
        (7.1, "plan", {"fingerprint": plan_fingerprint(rev), "path": str(out),
                       "campaign": rev.campaign.id, "plan_id": plan_id(rev),
                       "revision": rev.revision, "parent": rev.parent, "accepted_change": "",
                       "runs": {r.id: run_parameters(r) for r in rev.runs}}),
        (7.1, "executor", {"pid": 1, "cards": [0, 1, 2], "window_start": T0})]
    for r in rev.runs if finished else ():
        rec = hist.runs.get(r.id)
        if rec is not None and rec.state == "finished":
            continue
        end = r.end_h * 3600
        if rec is None:
            lines.append((r.start_h * 3600, "started", {
                "run": r.id, "attempt": 1, "cards": r.card, "resume": "",
                "fingerprint": run_fingerprint(r), "pid": 999_999_999}))
        lines += [(end, "progress", {"run": r.id, "attempt": 1, "step": r.steps}),
                  (end + 0.001, "exited", {"run": r.id, "attempt": 1, "code": 0,
                                           "outcome": "finished"})]
    with open(ws.journal, "a") as fh:
        for t, ev, fields in sorted(lines, key=lambda line: line[0]):
            fh.write(json.dumps({"t": T0 + t, "ev": ev, **fields}) + "\n")
    return plan_path, plan, rev


def test_the_screen_follows_the_revision_run_switched_to(tmp_path: Path) -> None:
    plan_path, plan, rev = revised_campaign(tmp_path)
    ws = Workspace(plan_path.parent)
    hist = fold(read_events(ws.journal))
    f = following(plan, plan_path, hist, ws)
    assert f.plan.revision == 1 and f.path == plan_path.parent / "revision-1" / "plan.toml"
    assert f.note == "Following revision 1 (revision-1/plan.toml): `run` switched to it"
    dropped = {r.id for r in plan.runs} - {r.id for r in rev.runs}
    assert dropped  # the revision left a run out: the screen draws no bar for it
    v = view(f.plan, hist, ws, T0 + 8.0)
    assert sum(v.counts.values()) == len(rev.runs)
    # Run to its end, the revision's runs are all done (the old plan would still count
    # the dropped run as pending).
    plan_path, plan, rev = revised_campaign(tmp_path / "ran", finished=True)
    ws = Workspace(plan_path.parent)
    hist = fold(read_events(ws.journal))
    f = following(plan, plan_path, hist, ws)
    done = view(f.plan, hist, ws, T0 + 12.5)
    assert done.counts == {"done": len(rev.runs), "running": 0, "pending": 0, "failed": 0}
    assert "ends inside the window" in headline(done)[1]
    assert not {b.label for b in v.bars} & {rid.split(f"{rev.campaign.id}-")[1]
                                            for rid in dropped}
    # A revision whose file no longer matches what the journal ran is not shown as it.
    h.write_plan(plan, plan_path.parent / "revision-1" / "plan.toml")
    f = following(plan, plan_path, hist, ws)
    assert f.plan is plan and "no longer the plan it runs" in f.note


async def test_the_app_switches_and_says_so(tmp_path: Path) -> None:
    plan_path, plan, rev = revised_campaign(tmp_path)
    a = ProgressApp(plan, plan_path, Workspace(plan_path.parent), clock=lambda: T0 + 8.0,
                    refresh_s=3600)
    async with a.run_test(size=SMALL) as pilot:
        await pilot.pause()
        assert a.plan.revision == 1
        assert "Following revision 1" in str(a.query_one("#follow").render())
        head = str(a.query_one("#head").render())
        assert f"3 done · 3 running · {len(rev.runs) - 6} pending" in head


def test_never_inside_the_window_with_runs_at_risk(tmp_path: Path) -> None:
    plan_path, plan = busy_campaign(tmp_path)
    ws = Workspace(plan_path.parent)
    v = view(plan, fold(read_events(ws.journal)), ws, T0 + 7.0)
    assert v.late and "inside the window" not in "\n".join(headline(v))
    assert f"{len(v.late)} run(s) no longer fit" in headline(v)[1]


def test_bars_carry_their_run_where_they_are_wide_enough() -> None:
    bars = [Bar(0, 0.0, 5.0, "done", "baseline-s0"), Bar(0, 5.0, 5.5, "planned", "slow-s0"),
            Bar(1, 0.0, 10.0, "running", "slow-s1")]
    line0, line1 = timeline(View("c", 6.0, 10.0, 10.0, 2, bars, {}, {}, []), 49)
    assert f"{DONE}baseline-s0{DONE}" in line0 and "slow-s0" not in line0  # 2 columns
    assert f"{RUNNING}slow-s1{RUNNING}" in line1
    # Never across the now line: after it, with a mark of the bar on both sides.
    _, line1 = timeline(View("c", 0.5, 10.0, 10.0, 2, bars, {}, {}, []), 49)
    assert f"{NOW}{RUNNING}slow-s1{RUNNING}" in line1


def test_progress_before_revision_small(snap_compare: Any, tmp_path: Path) -> None:
    """80×24, before the revision: slow seed 3 at risk, never "inside the window"."""
    plan_path, plan = busy_campaign(tmp_path)
    a = ProgressApp(plan, plan_path, Workspace(plan_path.parent), clock=lambda: T0 + 7.0,
                    refresh_s=3600)
    assert snap_compare(a, terminal_size=SMALL)


def test_progress_after_revision_small(snap_compare: Any, tmp_path: Path) -> None:
    """80×24, after `run` switched to revision 1 and ran it to its end: the screen says
    so and shows the revision's runs, all done, none of the dropped one."""
    plan_path, plan, _ = revised_campaign(tmp_path, finished=True)
    a = ProgressApp(plan, plan_path, Workspace(plan_path.parent), clock=lambda: T0 + 12.5,
                    refresh_s=3600)
    assert snap_compare(a, terminal_size=SMALL)


def test_progress_after_revision_large(snap_compare: Any, tmp_path: Path) -> None:
    """120×36, just after `run` switched to revision 1."""
    plan_path, plan, _ = revised_campaign(tmp_path)
    a = ProgressApp(plan, plan_path, Workspace(plan_path.parent), clock=lambda: T0 + 8.0,
                    refresh_s=3600)
    assert snap_compare(a, terminal_size=LARGE)

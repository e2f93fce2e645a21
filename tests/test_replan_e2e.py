"""End to end: a variant runs 2× slower than planned, the executor is stopped part way,
`replan` observes it, and `run` on the revision finishes what is left, re-running nothing.

The moments are picked by journal events (two runs finished; the executor gone), never by
a clock. The first session's journal is then put on given times (`tests/given_times.py`):
the slow variant at exactly twice its planned step time, the baseline at its plan, so what
`replan` observes and decides does not hang on the machine's load. A first replan, with
the whole rest of the window, times what is left; the replan under test is made as of a
moment `--at` that leaves 2.2 s more than that work less the slow variant's seed 2 (14.2 s
when two runs finished first): room for everything else at the observed step times, not
for the slow seed 2, nor for it in place of a baseline run. How many runs the stopped
session finished, and how far a stopped run got, vary with the machine's load; the room
follows them, so the decision does not."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.given_times import rewrite
from tests.run_fixtures import harness as h

STEP_S = 0.3
STEPS = 10
WINDOW_S = 60.0
SLACK_S = 2.2
"""Room left beyond the work that should still run: under the 3 s of a baseline run."""
GIVEN = {"baseline": 1.0, "slow": 2.0}
"""Observed ÷ planned step time of each variant in the given times."""
PAST = 10_000.0
"""Seconds before now the given timeline starts: no event lies in the future."""


def slow_preset() -> dict[str, Any]:
    """Baseline and `slow` (2× its planned step time) over seeds 0-2 on one card, no
    overheads, a window of under half a minute."""
    d = h.preset(steps=STEPS, seeds=(0, 1, 2), step_s=STEP_S, every=5, cards=1, max_retries=1,
                 variants={"slow": {"slow": "2"}}, robustness=[])
    d["campaign"].pop("window_days")
    d["campaign"]["window_hours"] = WINDOW_S / 3600
    d["overheads"] = {"stack_check_hours": 0.0, "startup_minutes": 0.0}
    figure = {"value": STEP_S, "source": "entered"}
    d["ablation"]["baseline"]["factors"]["slow"] = "1"
    d["ablation"]["baseline"]["step_time_s"] = figure
    for v in d["ablation"]["variants"]:
        v["step_time_s"] = figure
    return d


def wait_events(workdir: Path, done: int, proc: Any) -> None:
    """Until the journal holds `done` finished runs (or the executor ended)."""
    path = workdir / "campaign-run" / "journal.jsonl"
    while proc.poll() is None:
        if path.exists() and path.read_text().count('"outcome":"finished"') >= done:
            return
        time.sleep(0.01)


def iso(t: float) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(t, UTC).isoformat()


def at_left(workdir: Path, usable_until_h: float, left_s: float) -> str:
    """The moment `left_s` before the usable window's end (after every journal event)."""
    events = h.journal(workdir)
    start = next(e["window_start"] for e in events if e["ev"] == "executor")
    at = start + usable_until_h * 3600 - left_s
    assert at > events[-1]["t"], "the first session took most of the window"
    return iso(at)


def work_left_s(plan_path: Path, out_dir: Path) -> float:
    """Seconds of the runs a replan with the whole rest of the window keeps, as it times them."""
    last = h.journal(plan_path.parent)[-1]["t"]
    r = h.cli("replan", str(plan_path), "--out", str(out_dir), "--at", iso(last + 0.01), "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert not out["dropped"], out["dropped"]
    rev = h.load(out_dir / "plan.toml")
    return sum((r.end_h - r.start_h) * 3600 for r in rev.runs if r.id in out["remaining"])


def test_slow_variant_replanned_and_finished(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", slow_preset())
    plan = h.load(plan_path)
    assert not plan.not_fitting  # at planned speed the six runs fit
    wd = plan_path.parent
    proc = h.start(plan_path, "--progress-every", "0", out=wd / "first.out")
    wait_events(wd, 2, proc)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(300) == 128 + signal.SIGTERM
    h.wait_gone(wd)
    rewrite(wd / "campaign-run" / "journal.jsonl", plan, GIVEN, time.time() - PAST, workdir=wd)

    slow_run_s = STEPS * STEP_S * GIVEN["slow"]
    left_s = work_left_s(plan_path, tmp_path / "roomy") - slow_run_s + SLACK_S
    rev_dir = tmp_path / "rev"
    r = h.cli("replan", str(plan_path), "--out", str(rev_dir), "--at",
              at_left(wd, plan.campaign.usable_until_h, left_s),
              "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    slow, base = out["observed"]["slow"], out["observed"]["baseline"]
    assert slow["source"] == "observed" and slow["runs"] == 1
    assert slow["ratio"] == pytest.approx(2.0, abs=1e-4)
    assert base["ratio"] == pytest.approx(1.0, abs=1e-4)
    cid = plan.campaign.id
    # The executor is stopped once two runs have finished; on a loaded machine the third
    # (the baseline's seed 1, next on the card) may finish before the stop reaches it. Either
    # way the replan must count what finished, re-time the rest and drop the slow seed 2.
    first = {e["run"] for e in h.journal(wd)
             if e["ev"] == "exited" and e["outcome"] == "finished"}
    assert {f"{cid}-baseline-s0", f"{cid}-slow-s0"} <= first
    assert first <= {f"{cid}-baseline-s0", f"{cid}-slow-s0", f"{cid}-baseline-s1"}
    assert sorted(out["finished"]) == sorted(first)
    assert out["revision"] == 1 and out["parent"] == cid
    assert [d["id"] for d in out["dropped"]] == [f"{cid}-slow-s2"]
    assert "no longer ends by hour" in out["dropped"][0]["reason"]
    assert "slow" in out["dropped"][0]["reason"] or "2." in out["dropped"][0]["reason"]
    assert sorted(out["remaining"]) == sorted(
        f"{cid}-{v}-s{s}" for v, s in [("baseline", 1), ("slow", 1), ("baseline", 2)]
        if f"{cid}-{v}-s{s}" not in first)
    rev = h.load(rev_dir / "plan.toml")
    assert rev.revision == 1 and rev.parent == cid
    assert [r.id for r in rev.held] == [f"{cid}-slow-s2"]
    timed = {r.id: (r.end_h - r.start_h) * 3600 for r in rev.runs}
    # Re-timed: the slow variant's run at twice its planned step time; the baseline's at
    # its plan, less the steps a checkpoint of the stopped session already holds.
    planned = {r.id: (r.end_h - r.start_h) * 3600 for r in plan.runs}
    held = out["resuming"].get(f"{cid}-baseline-s1", {}).get("from_step", 0)
    assert timed[f"{cid}-slow-s1"] == pytest.approx(planned[f"{cid}-slow-s1"]
                                                    + STEPS * STEP_S, abs=1e-3)
    if f"{cid}-baseline-s1" not in first:
        assert timed[f"{cid}-baseline-s1"] == pytest.approx(planned[f"{cid}-baseline-s1"]
                                                            - held * STEP_S, abs=1e-3)
    assert min(r.start_h for r in rev.runs if r.id in out["remaining"]) >= out["now_h"] - 1e-6

    second = h.start(rev_dir / "plan.toml", "--workdir", str(wd), out=wd / "second.out")
    assert second.wait(300) == 0, (wd / "second.out").read_text()
    h.wait_gone(wd)
    events = h.journal(wd)
    switch = [e for e in events if e["ev"] == "plan"]
    assert len(switch) == 2 and switch[-1]["revision"] == 1 and switch[-1]["parent"] == cid
    assert "revision 1" in switch[-1]["accepted_change"]
    ran = {r.id for r in rev.runs}
    for run in plan.runs:
        mine = [e for e in events if e.get("run") == run.id]
        finished = [e for e in mine if e["ev"] == "exited" and e["outcome"] == "finished"]
        if run.id in ran:
            assert len(finished) == 1, run.id
            later = [e for e in mine if e["ev"] == "started" and e["t"] > finished[0]["t"]]
            assert not later, f"{run.id} ran again"
        else:
            assert not mine, f"{run.id} was dropped yet started"
    for run_id, trace in h.traces(plan, wd).items():
        ends = [e for e in trace if e["ev"] == "end"]
        assert len(ends) == (run_id in ran), run_id
        assert not [e for e in trace if e["ev"] in ("concurrent", "mismatch")]
    assert any(e["ev"] == "progress" for e in events)

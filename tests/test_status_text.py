"""`status` as text (`status.text`) is the summary's rendering, line for line, in every
state a run can be in; every row within 80 columns."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from planner.run import status
from planner.run.journal import Workspace, fold
from planner.run.params import run_fingerprint
from tests.conftest import plan_dict, shipped


def _events(kind: str, origin: float) -> list[dict[str, object]]:
    plan = plan_dict(shipped("ablation-7d"))
    if kind == "none":
        return []
    events: list[dict[str, object]] = [{"t": origin, "ev": "executor", "cards": [0, 1, 2, 3],
                                        "window_start": origin, "pid": 1}]
    outcomes = {"slow": ["finished"] * 4,
                "mixed": ["finished", "failed", "running", "retrying", "interrupted"]}[kind]
    for run, outcome in zip(plan.runs, outcomes, strict=False):
        t0 = origin + run.start_h * 3600
        t1 = t0 + (run.end_h - run.start_h) * 1.5 * 3600
        events.append({"t": t0, "ev": "started", "run": run.id, "attempt": 1,
                       "cards": run.card, "fingerprint": run_fingerprint(run),
                       "pid": os.getpid() if outcome == "running" else 0})
        if outcome != "running":
            events.append({"t": t1, "ev": "exited", "run": run.id, "attempt": 1,
                           "code": 0 if outcome == "finished" else 3, "outcome": outcome})
    return events


@pytest.mark.parametrize("kind", ["none", "slow", "mixed"])
def test_the_text_is_the_summarys_rendering(kind: str, tmp_path: Path) -> None:
    plan = plan_dict(shipped("ablation-7d"))
    now = time.time()
    hist = fold(_events(kind, now - 80 * 3600))
    ws = Workspace(tmp_path)
    summary = status.summarize(plan, hist, ws, now)
    assert status.text(plan, hist, ws, now) == status.render(summary)
    json.dumps(summary)  # plain data only


def test_every_row_has_the_same_keys_in_the_same_order(tmp_path: Path) -> None:
    plan = plan_dict(shipped("ablation-7d"))
    summary = status.summarize(plan, fold([]), Workspace(tmp_path))
    keys = [list(r) for r in summary["runs"]]
    assert all(k == keys[0] for k in keys)
    assert len({r["id"] for r in summary["runs"]}) == len(plan.runs)


SHIPPED = ("ablation-3d", "ablation-7d", "ablation-30d", "adaptation-30d", "embedding-3d",
           "embedding-7d", "embedding-30d")


@pytest.mark.parametrize("name", SHIPPED)
def test_every_row_fits_80_columns(name: str, tmp_path: Path) -> None:
    plan = plan_dict(shipped(name))
    now = time.time()
    origin = now - plan.campaign.usable_until_h * 0.5 * 3600
    events: list[dict[str, object]] = [{"t": origin, "ev": "executor", "pid": 1,
                                        "cards": list(range(plan.campaign.cards)),
                                        "window_start": origin}]
    # A row in every state, with figures under the rows; the longest ids (evaluations of
    # runs) wait for theirs.
    runs = sorted((r for r in plan.runs if not r.depends_on), key=lambda r: -len(r.id))[:5]
    for run, outcome in zip(runs, ["finished", "failed", "running", "retrying",
                                   "interrupted"], strict=False):
        t0 = origin + run.start_h * 3600
        events.append({"t": t0, "ev": "started", "run": run.id, "attempt": 1,
                       "cards": run.card, "fingerprint": run_fingerprint(run),
                       "pid": os.getpid() if outcome == "running" else 0})
        if run.steps:
            events.append({"t": t0 + 60, "ev": "progress", "run": run.id, "attempt": 1,
                           "step": max(run.steps // 3, 1)})
        if outcome != "running":
            events.append({"t": t0 + 3600 * 1.2 * (run.end_h - run.start_h), "ev": "exited",
                           "run": run.id, "attempt": 1, "outcome": outcome,
                           "code": 0 if outcome == "finished" else 3})
    for hist in (fold([]), fold(events)):
        text = status.text(plan, hist, Workspace(tmp_path), now)
        lines = text.splitlines()
        table = lines[lines.index("") + 1:]
        assert table[0].split() == ["run", "state", "try", "planned", "h", "actual", "h",
                                    "took"]
        assert len(table) >= len(plan.runs) + 1
        wide = [line for line in table if len(line) > 80]
        assert not wide, wide
        # Each run named once, by its id less the campaign's, said above the table.
        assert f"Run ids   {plan.campaign.id}-NAME; the table names NAME" in lines
        names = {line.split()[0] for line in table[1:] if line.startswith("  ") and
                 not line.startswith("      ")}
        assert names == {r.id.removeprefix(f"{plan.campaign.id}-") for r in plan.runs}

"""Journals written by hand for replan and status tests: a plan of the fixture trainer
and the events an executor would have written, at chosen times."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from planner.planfile.plan import Plan
from planner.run.params import plan_fingerprint, run_fingerprint, run_parameters
from planner.run.procs import identity
from tests.run_fixtures import harness as h

T0 = 1_800_000_000.0
"""The window's start in every hand-written journal."""


def preset(seeds: tuple[int, ...] = (0, 1, 2), window_s: float = 40.0, step_s: float = 0.3,
           cards: int = 1, robustness: list[str] | None = None,
           command: str | None = None) -> dict[str, Any]:
    """Baseline and `slow` over `seeds`, no overheads, a window of `window_s` seconds;
    `command` replaces the fixture trainer's (one naming no path of this machine keeps the
    campaign id the same everywhere)."""
    d = h.preset(steps=10, seeds=seeds, step_s=step_s, every=5, cards=cards, max_retries=1,
                 variants={"slow": {"slow": "2"}}, robustness=robustness or [],
                 command=command)
    d["campaign"].pop("window_days")
    d["campaign"]["window_hours"] = window_s / 3600
    d["overheads"] = {"stack_check_hours": 0.0, "startup_minutes": 0.0}
    figure = {"value": step_s, "source": "entered"}
    d["ablation"]["baseline"]["factors"]["slow"] = "1"
    d["ablation"]["baseline"]["step_time_s"] = figure
    for v in d["ablation"]["variants"]:
        v["step_time_s"] = figure
    if robustness:
        d["ablation"]["robustness"][0]["eval_minutes"] = 0.01
    return d


class JournalWriter:
    """Appends events, as the executor would, with explicit times (seconds from T0)."""

    def __init__(self, plan: Plan, workdir: Path, campaign: str | None = None) -> None:
        self.plan = plan
        self.path = workdir / "campaign-run" / "journal.jsonl"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.ids = {r.id: r for r in plan.runs}
        self.add(-0.01, "plan", fingerprint=plan_fingerprint(plan), path="plan.toml",
                 campaign=campaign or plan.campaign.id,
                 runs={r.id: run_parameters(r) for r in plan.runs})
        self.add(0.0, "executor", pid=1, cards=list(range(plan.campaign.cards)),
                 window_start=T0)

    def add(self, t: float, ev: str, **fields: Any) -> None:
        with open(self.path, "a") as fh:
            fh.write(json.dumps({"t": T0 + t, "ev": ev, **fields}) + "\n")

    def run(self, run_id: str, start: float, step_s: float, *, until: int | None = None,
            attempt: int = 1, card: int = 0, outcome: str = "finished",
            alive: bool = False, stride: int = 1) -> float:
        """One attempt: a start, a sample every `stride` steps up to `until` (all steps by
        default), and its exit unless `alive`; returns the time it reached."""
        run = self.ids[run_id]
        proc = identity(os.getpid()) if alive else {"pid": 999_999_999}
        self.add(start, "started", run=run_id, attempt=attempt, cards=[card],
                 fingerprint=run_fingerprint(run), resume="", **proc)
        t = start
        last = run.steps if until is None else until
        for step in range(stride, last + 1, stride):
            t = start + step * step_s
            self.add(t, "progress", run=run_id, attempt=attempt, step=step)
        t = start + last * step_s
        if not alive:
            code = 0 if outcome == "finished" else (None if outcome == "interrupted" else 3)
            self.add(t + 0.001, "exited", run=run_id, attempt=attempt, code=code,
                     outcome=outcome)
        return t + 0.001

"""Figures for the executor: prints them, asserts nothing.

    python benchmarks/bench_run.py [RUNS]

1. Executor overhead per run: a plan of RUNS (default 48) runs whose command is `true`,
   on 4 cards, run by `campaign-planner run` at two poll intervals. The work is nil, so
   the wall time is the executor's own: process start, journal (fsync'd), launcher, poll.
2. Journal size and the time `campaign-planner status` takes on that journal.
3. `status` on the 80 runs of ablation-30d with a synthetic 30-day journal of 10,000
   checkpoint events (what a month of checkpoints every ~20 minutes looks like).
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.run_fixtures import harness as h


def overhead(runs: int, poll: float) -> tuple[float, int]:
    """Wall seconds for `run` over `runs` no-op runs, and the journal's size in bytes."""
    seeds = tuple(range(runs // 2))
    data = h.preset(seeds=seeds, cards=4, robustness=[], variants={"v": {"lr": "0.2"}},
                    command="true --run-id {run_id}")
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = h.make_plan(Path(tmp) / "p", data)
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-m", "planner", "run", str(plan_path),
                               "--poll", str(poll)], capture_output=True, text=True)
        wall = time.perf_counter() - t
        assert proc.returncode == 0, proc.stdout + proc.stderr
        size = (plan_path.parent / "campaign-run" / "journal.jsonl").stat().st_size
        t = time.perf_counter()
        subprocess.run([sys.executable, "-m", "planner", "status", str(plan_path)],
                       capture_output=True, check=True)
        print(f"    status on that journal: {time.perf_counter() - t:.2f} s (a fresh process)")
    return wall, size


def month_status() -> float:
    """Seconds of `summarize` over ablation-30d with 10,000 checkpoint events."""
    from planner.run.journal import Workspace, fold, read_events
    from planner.run.params import run_fingerprint
    from planner.run.status import summarize
    from tests.conftest import plan_dict, shipped

    plan = plan_dict(shipped("ablation-30d"))
    origin = time.time() - 300 * 3600
    events = [{"t": origin, "ev": "executor", "cards": [0, 1, 2, 3], "window_start": origin}]
    per_run = 10_000 // len(plan.runs)
    for run in plan.runs:
        t0 = origin + run.start_h * 3600
        events.append({"t": t0, "ev": "started", "run": run.id, "attempt": 1,
                       "cards": run.card, "fingerprint": run_fingerprint(run), "pid": 0})
        events += [{"t": t0 + i, "ev": "checkpointed", "run": run.id, "attempt": 1}
                   for i in range(per_run)]
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp))
        ws.root.mkdir()
        ws.journal.write_text("".join(json.dumps(e) + "\n" for e in events))
        t = time.perf_counter()
        summarize(plan, fold(read_events(ws.journal)), ws)
        return time.perf_counter() - t


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 48
    print(f"1. executor overhead, {runs} no-op runs on 4 cards")
    for poll in (0.05, 1.0):
        wall, size = overhead(runs, poll)
        print(f"    --poll {poll:<4}: {wall:.2f} s wall, {wall / runs * 1000:.0f} ms per run "
              f"({wall / runs * 4 * 1000:.0f} ms of card time per run on 4 cards); "
              f"journal {size / 1024:.1f} KiB")
    print(f"2. status over ablation-30d with 10,000 journal events: {month_status():.3f} s "
          f"in process")


if __name__ == "__main__":
    main()

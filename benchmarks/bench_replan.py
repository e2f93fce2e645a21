"""Figures for `replan`: prints them, asserts nothing.

    python benchmarks/bench_replan.py [SEEDS]

A campaign of 10 configurations × SEEDS (default 100) seeds = 1,000 training runs on 16
cards over 30 days, half of them finished in a hand-written journal (a start, ten progress
samples and an exit each, one configuration at 1.5× its planned step time), and 4 running.
Times `replan` in this process (read the plan, read and fold the journal, observe, pack,
write the revision) and as a fresh `campaign-planner replan` process, beside the load
average.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.replan_support import JournalWriter
from tests.run_fixtures import harness as h


def campaign(folder: Path, seeds: int) -> Path:
    data = h.preset(steps=2000, seeds=tuple(range(seeds)), cards=16, robustness=[],
                    variants={f"v{i}": {"lr": f"0.{i + 2}"} for i in range(9)})
    data["campaign"]["window_days"] = 30
    return h.make_plan(folder, data)


def journal(plan_path: Path) -> int:
    plan = h.load(plan_path)
    j = JournalWriter(plan, plan_path.parent)
    half = len(plan.runs) // 2
    for n, run in enumerate(plan.runs[:half + 4]):
        step_s = 1.5 if run.variant == "v0" else 1.0
        start = run.start_h * 3600 * 1.2
        j.run(run.id, start, step_s, until=run.steps * 4 // 10 if n >= half else None,
              card=n % 16, alive=n >= half, stride=run.steps // 10)
    return sum(1 for _ in j.path.open())


def in_process(plan_path: Path, out: Path, at: float) -> tuple[float, float, float]:
    from planner.planfile.export import plan_toml, read_plan
    from planner.planfile.replace import replace_together
    from planner.run.journal import Workspace, fold, read_events
    from planner.run.replan import replan

    t, cpu = time.perf_counter(), time.process_time()
    plan = read_plan(plan_path)
    ws = Workspace(plan_path.parent)
    hist = fold(read_events(ws.journal))
    t_pack = time.perf_counter()
    result = replan(plan, hist, ws, at)
    pack_s = time.perf_counter() - t_pack
    replace_together(out, [(out / "plan.toml", plan_toml(result.plan))], force=True)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    print(f"    {len(result.finished)} finished, {len(result.running)} running, "
          f"{len(result.remaining)} re-timed, {len(result.dropped)} dropped; "
          f"v0 ratio {result.observed['v0'].ratio:.2f}")
    return wall, cpu, pack_s


def main() -> None:
    seeds = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    with tempfile.TemporaryDirectory() as tmp:
        plan_path = campaign(Path(tmp) / "p", seeds)
        events = journal(plan_path)
        runs = len(h.load(plan_path).runs)
        last = max(float(x.split('"t": ')[1].split(",")[0])
                   for x in (plan_path.parent / "campaign-run" / "journal.jsonl").open())
        at = last + 1.0
        print(f"replan of {runs} runs, half finished ({events} journal events), "
              f"load average {os.getloadavg()[0]:.2f}")
        wall, cpu, pack_s = min(in_process(plan_path, Path(tmp) / f"r{i}", at)
                                for i in range(3))
        print(f"    in process: {wall * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU (best of 3); "
              f"of which observing and packing {pack_s * 1000:.0f} ms, the rest reading "
              f"plan.toml and the journal and writing the revision")
        iso = time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime(at))
        t = time.perf_counter()
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([sys.executable, "-m", "planner", "replan", str(plan_path), "--out",
                        str(Path(tmp) / "cli"), "--at", iso], check=True,
                       capture_output=True)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
        print(f"    campaign-planner replan, a fresh process: {wall:.2f} s wall, {cpu:.2f} s "
              f"CPU; load average {os.getloadavg()[0]:.2f} (target: ≤ 1 s)")


if __name__ == "__main__":
    main()

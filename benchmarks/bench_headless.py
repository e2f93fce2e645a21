"""Speed figures for the core: prints them, asserts nothing.

    python benchmarks/bench_headless.py

1. A headless run of `ablation-30d` end to end (a fresh `campaign-planner` process that
   plans and writes both files), wall time over several runs. Target: under 0.3 s.
2. `plan_campaign` alone on `ablation-30d`, in process.
3. Scheduling 100,000 runs on 64 cards. Target: under 1 s. Printed with the makespan
   against the lower bound (total work ÷ cards) and the utilization it implies.
"""

from __future__ import annotations

import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def headless(repeat: int = 15) -> list[float]:
    """Wall seconds of `campaign-planner --preset ablation-30d --out DIR` processes."""
    exe = shutil.which("campaign-planner")
    cmd = [exe] if exe else [sys.executable, "-m", "planner"]
    times = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(repeat):
            t = time.perf_counter()
            subprocess.run([*cmd, "--preset", "ablation-30d", "--out", str(Path(tmp) / str(i))],
                           check=True, stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - t)
    return times


def in_process(repeat: int = 50) -> list[float]:
    """Seconds of `plan_campaign` on ablation-30d, after the first call."""
    from planner.campaign import plan_campaign
    from planner.catalog import load_catalog
    from planner.loading import load_preset

    preset, _ = load_preset("ablation-30d")
    catalog = load_catalog()
    plan_campaign(preset, catalog)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        plan_campaign(preset, catalog)
        times.append(time.perf_counter() - t)
    return times


def big_schedule(n: int = 100_000, cards: int = 64, repeat: int = 5) -> None:
    """Time the scheduler on n runs (1–4 cards each) and compare with the lower bound."""
    from planner.schedule import schedule

    rng = random.Random(0)
    durations = [rng.lognormvariate(2.5, 0.8) for _ in range(n)]
    needed = [rng.choice((1, 1, 1, 2, 4)) for _ in range(n)]
    work = sum(d * k for d, k in zip(durations, needed, strict=True))
    horizon = float("inf")
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        placed = schedule(durations, needed, cards, horizon)
        times.append(time.perf_counter() - t)
    makespan = max(p.end for p in placed if p is not None)
    bound = work / cards
    print(f"schedule {n:,} runs on {cards} cards (1-4 cards each, no deadline): "
          f"median {statistics.median(times):.3f} s, min {min(times):.3f} s "
          f"over {repeat} runs")
    print(f"  makespan {makespan:,.1f} h vs lower bound {bound:,.1f} h (total work ÷ cards): "
          f"ratio {makespan / bound:.4f}, utilization {bound / makespan:.2%}")
    single = [1] * n
    t = time.perf_counter()
    placed = schedule(durations, single, cards, horizon)
    took = time.perf_counter() - t
    makespan = max(p.end for p in placed if p is not None)
    bound = sum(durations) / cards
    print(f"schedule {n:,} single-card runs on {cards} cards: {took:.3f} s; makespan "
          f"{makespan:,.1f} h vs lower bound {bound:,.1f} h, utilization {bound / makespan:.2%}")
    deadline = bound * 0.8
    t = time.perf_counter()
    placed = schedule(durations, needed, cards, deadline)
    took = time.perf_counter() - t
    fit = sum(p is not None for p in placed)
    busy = sum((p.end - p.start) * len(p.cards) for p in placed if p is not None)
    print(f"schedule {n:,} runs on {cards} cards with a deadline at 80% of the bound: "
          f"{took:.3f} s; {fit:,} runs fit, cards busy {busy / (deadline * cards):.2%} of "
          f"the window")


def main() -> None:
    """Print every figure."""
    print(f"python {sys.version.split()[0]} on {sys.platform}")
    h = headless()
    print(f"headless ablation-30d end to end (process, plan, write both files): "
          f"median {statistics.median(h):.3f} s, min {min(h):.3f} s, max {max(h):.3f} s "
          f"over {len(h)} runs")
    p = in_process()
    print(f"plan_campaign(ablation-30d) in process: median {statistics.median(p) * 1000:.2f} ms")
    big_schedule()


if __name__ == "__main__":
    main()

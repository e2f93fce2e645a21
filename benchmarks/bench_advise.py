"""Speed of `advise`: prints figures beside the load average, asserts nothing.

    python benchmarks/bench_advise.py

1. The default space of the issue — 5 card models (a6000, a40, rtx6000ada, l40s, a100-80)
   × counts 1–8 × 3, 7 and 30 days = 120 orders — searched in process, per shipped preset.
   Target: at most 2 s each.
2. The default card list (every catalog card with the memory for the campaign) × 8 × 3.
3. `campaign-planner advise --preset ablation-7d` end to end in a fresh process.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import time

FIVE = ("a6000", "a40", "rtx6000ada", "l40s", "a100-80")
PRESETS = ("ablation-7d", "ablation-30d", "ablation-3d", "adaptation-30d", "embedding-7d")


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as `uptime` shows them."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def search(preset_name: str, cards: tuple[str, ...] | None, repeat: int = 5) -> tuple[
        list[float], int]:
    """Seconds of `advise` over the space, and the orders planned."""
    from planner.advise.goal import Goal
    from planner.advise.model import Space
    from planner.advise.search import advise
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    preset, _ = load_preset(preset_name)
    catalog = load_catalog()
    times = []
    planned = 0
    for _ in range(repeat):
        t = time.perf_counter()
        result = advise(preset, catalog, Space(cards), Goal("all"))
        times.append(time.perf_counter() - t)
        planned = result.planned
    return times, planned


def end_to_end(repeat: int = 5) -> list[float]:
    """Wall seconds of `campaign-planner advise --preset ablation-7d` processes."""
    exe = shutil.which("campaign-planner")
    cmd = [exe] if exe else [sys.executable, "-m", "planner"]
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        subprocess.run([*cmd, "advise", "--preset", "ablation-7d"], check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - t)
    return times


def main() -> None:
    """Print every figure."""
    print(f"python {sys.version.split()[0]} on {sys.platform}; {load()}")
    for name in PRESETS:
        times, planned = search(name, FIVE)
        print(f"advise {name}, 5 cards × 8 counts × 3 windows ({planned} orders): median "
              f"{statistics.median(times):.3f} s, max {max(times):.3f} s over {len(times)} "
              f"runs (target <= 2 s); {load()}")
    for name in ("ablation-7d", "embedding-7d"):
        times, planned = search(name, None)
        print(f"advise {name}, default cards × 8 × 3 ({planned} orders): median "
              f"{statistics.median(times):.3f} s; {load()}")
    e2e = end_to_end()
    print(f"campaign-planner advise --preset ablation-7d, fresh process: median "
          f"{statistics.median(e2e):.3f} s, max {max(e2e):.3f} s; {load()}")


if __name__ == "__main__":
    main()

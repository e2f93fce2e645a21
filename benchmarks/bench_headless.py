"""Speed figures for the core: prints them, asserts nothing.

    python benchmarks/bench_headless.py

1. A headless run of `ablation-30d` end to end (a fresh `campaign-planner` process that
   plans and writes both files), beside the import floor measured in the same run,
   interleaved: a fresh python that imports pydantic, tomllib, tomli_w and humanize and
   does nothing else. Target: headless at most 2.5 × the floor (median over median).
   Wall and CPU time (the children's user + system) are both printed, beside the load
   average: on a shared machine wall time counts the waits for a core.
   Both kinds of process load compiled bytecode, as an installed package does (pip
   compiles it at install): where PYTHONDONTWRITEBYTECODE is set, an editable checkout
   would otherwise compile the planner's sources in every run while pydantic's come
   compiled. The children keep their bytecode under a temporary PYTHONPYCACHEPREFIX,
   written by one untimed run of each; the figures without it are printed too.
2. `plan_campaign` alone on `ablation-30d`, in process.
3. Scheduling 100,000 runs on 64 cards. Target: under 1 s. Printed with the makespan
   against the lower bound (total work ÷ cards) and the utilization it implies.
"""

from __future__ import annotations

import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FLOOR = "import pydantic, tomllib, tomli_w, humanize"
"""What any planner process must import: the floor the headless run is measured against."""


def load() -> str:
    """The load average, for reading the figures beside."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def _child(cmd: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """(Wall, CPU) seconds of one child process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def headless(repeat: int = 15, *, bytecode: bool = True
             ) -> tuple[list[tuple[float, float]], list[tuple[float, float]]]:
    """(Wall, CPU) seconds of `campaign-planner --preset ablation-30d --out DIR` processes
    and of import-floor processes, taken in turn so both see the same load; with
    `bytecode`, both load compiled bytecode (kept under a temporary cache prefix)."""
    exe = shutil.which("campaign-planner")
    cmd = [exe] if exe else [sys.executable, "-m", "planner"]
    runs, floor = [], []
    with tempfile.TemporaryDirectory() as tmp:
        env = None
        if bytecode:
            env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
            env["PYTHONPYCACHEPREFIX"] = str(Path(tmp) / "pycache")
            _child([sys.executable, "-c", FLOOR], env)
            _child([*cmd, "--preset", "ablation-30d", "--out", str(Path(tmp) / "warm")], env)
        for i in range(repeat):
            floor.append(_child([sys.executable, "-c", FLOOR], env))
            runs.append(_child([*cmd, "--preset", "ablation-30d", "--out",
                                str(Path(tmp) / str(i))], env))
    return runs, floor


def _median(times: list[tuple[float, float]], i: int) -> float:
    return statistics.median(t[i] for t in times)


def in_process(repeat: int = 50) -> list[float]:
    """Seconds of `plan_campaign` on ablation-30d, after the first call."""
    from planner.campaign import plan_campaign
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

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
    from planner.packing.schedule import schedule

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
    print(f"python {sys.version.split()[0]} on {sys.platform}; {load()}")
    for bytecode in (True, False):
        if not bytecode and not os.environ.get("PYTHONDONTWRITEBYTECODE"):
            continue
        runs, floor = headless(bytecode=bytecode)
        how = ("compiled bytecode" if bytecode
               else "PYTHONDONTWRITEBYTECODE as set: sources without bytecode beside them are "
               "compiled in every run")
        print(f"-- {how}")
        for what, t in (("headless ablation-30d end to end (process, plan, write both files)",
                         runs), (f"import floor (python -c '{FLOOR}')", floor)):
            print(f"{what}: wall median {_median(t, 0):.3f} s, min "
                  f"{min(w for w, _ in t):.3f} s; CPU median {_median(t, 1):.3f} s over "
                  f"{len(t)} runs")
        print(f"headless / import floor: wall {_median(runs, 0) / _median(floor, 0):.2f} ×, "
              f"CPU {_median(runs, 1) / _median(floor, 1):.2f} ×   (target <= 2.5 ×); {load()}")
    p = in_process()
    print(f"plan_campaign(ablation-30d) in process: median {statistics.median(p) * 1000:.2f} ms")
    big_schedule()


if __name__ == "__main__":
    main()

"""The largest plan allowed, end to end: prints figures beside the load average, asserts
nothing.

    python benchmarks/bench_scale.py [RUNS] [--slurm] [--repeat N]

A training matrix of RUNS runs (default 100,000, the most a matrix may expand to: 100
configurations × 1,000 seeds) on 256 cards, each command the plain argument vector of
`train.py`. Each step is a fresh `campaign-planner` process, timed from outside:

1. planning it (`campaign-planner --preset ... --out ...`), target at most 15 s;
2. `campaign-planner status` on the plan, no journal yet, target at most 3 s;
3. `campaign-planner run --dry-run`, target at most 5 s;
4. with `--slurm`, `campaign-planner slurm`: the array scripts and one manifest per run
   (no target), made durable together before they are renamed into place.

Steps 2 and 3 are timed twice: with the cache of checked plans (`plan` filled it, as it
does on the machine that planned) and without it (`CAMPAIGN_PLANNER_CACHE=off`: a plan.toml
copied to another machine, read and checked in full the first time). With `--repeat N`,
each of them runs N times and the fastest is shown (on a noisy machine the least disturbed
run is the closest to what the command costs).
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.run_fixtures import harness as h

TARGETS = {"plan": 15.0, "status": 3.0, "run --dry-run": 5.0}


def load() -> str:
    """The 1-, 5- and 15-minute load averages, as `uptime` shows them."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def preset(runs: int) -> dict[str, object]:
    """A matrix of `runs` runs: 100 configurations (fewer for a small RUNS) × seeds."""
    configs = min(100, runs)
    seeds = tuple(range(runs // configs))
    variants = {f"v{i}": {"lr": f"0.{i + 2}"} for i in range(configs - 1)}
    data = h.preset(seeds=seeds, cards=256, robustness=[], variants=variants, steps=30)
    data["campaign"]["window_hours"] = 2000.0  # type: ignore[index]
    del data["campaign"]["window_days"]  # type: ignore[attr-defined]
    return data


def timed(argv: list[str], cache: Path | None) -> tuple[float, float]:
    """Wall and CPU seconds of `campaign-planner ARGV` in a fresh process (on a loaded
    machine the CPU seconds tell more: they are what it costs on an idle one)."""
    env = {**os.environ, "CAMPAIGN_PLANNER_CACHE": str(cache) if cache else "off"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "planner", *argv], capture_output=True,
                          text=True, env=env)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--slurm"]
    repeat = 1
    if "--repeat" in args:
        at = args.index("--repeat")
        repeat = int(args[at + 1])
        del args[at:at + 2]
    runs = int(args[0]) if args else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    try:
        src = tmp / "preset.toml"
        src.write_text(tomli_w.dumps(preset(runs)))
        out = tmp / "p"
        print(f"{runs:,} runs on 256 cards; {load()}", flush=True)
        cache = tmp / "cache"
        plan = out / "plan.toml"
        steps = [("plan", ["--preset", str(src), "--out", str(out), "--created",
                           "2026-01-01T00:00:00"], cache),
                 ("status", ["status", str(plan)], cache),
                 ("run --dry-run", ["run", "--dry-run", str(plan)], cache),
                 ("status, cold", ["status", str(plan)], None),
                 ("run --dry-run, cold", ["run", "--dry-run", str(plan)], None)]
        if "--slurm" in sys.argv:
            steps.append(("slurm", ["slurm", str(plan), "--out", str(tmp / "slurm")], cache))
        for name, argv, where in steps:
            times = [timed(argv, where) for _ in range(1 if name == "plan" else repeat)]
            wall, cpu = min(t[0] for t in times), min(t[1] for t in times)
            target = TARGETS.get(name.split(",")[0])
            goal = f"(target <= {target:g} s)" if target else ""
            print(f"  {name:<20} {wall:6.2f} s wall, {cpu:6.2f} s CPU {goal}", flush=True)
        size = plan.stat().st_size
        print(f"  plan.toml {size / 2**20:.1f} MiB; {load()}")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

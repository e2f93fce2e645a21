"""The largest plan allowed, end to end: prints figures beside the load average, asserts
nothing.

    python benchmarks/bench_scale.py [RUNS] [--slurm] [--repeat N] [--against REV]

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

With `--against REV` (a git revision), the same steps run on that revision too (checked
out as a worktree beside the plan), each of its tries next to one of this tree's, and the
ratio of the two fastest is shown: on a machine whose speed drifts from minute to minute,
a ratio measured in one run says more than figures from two.

Every process loads the planner's modules from cached bytecode, as an installed planner
does, even where the shell sets PYTHONDONTWRITEBYTECODE.
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


ROOT = Path(__file__).resolve().parent.parent


def timed(argv: list[str], cache: Path | None, root: Path = ROOT, where: Path | None = None
          ) -> tuple[float, float]:
    """Wall and CPU seconds of `campaign-planner ARGV` in a fresh process, the planner of
    the tree at `root`, started in folder `where` (on a loaded machine the CPU seconds tell
    more: they are what it costs on an idle one)."""
    env = {**os.environ, "CAMPAIGN_PLANNER_CACHE": str(cache) if cache else "off",
           "PYTHONPATH": str(root)}
    # The planner's modules loaded from their cached bytecode, as on an installed machine
    # (a shell that sets PYTHONDONTWRITEBYTECODE would have each process compile them).
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    # Started outside any tree, so that `-m planner` is the one PYTHONPATH names (the
    # folder a process starts in comes first on its path).
    proc = subprocess.run([sys.executable, "-m", "planner", *argv], capture_output=True,
                          text=True, env=env, cwd=where)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return wall, cpu


def _option(args: list[str], name: str) -> str | None:
    if name not in args:
        return None
    at = args.index(name)
    value = args[at + 1]
    del args[at:at + 2]
    return value


def _steps(tmp: Path, src: Path, slurm: bool) -> list[tuple[str, list[str], Path | None]]:
    """Each step's name, arguments and cache folder (None: the cache off), for a tree
    whose plan and cache live under `tmp`."""
    out, cache = tmp / "p", tmp / "cache"
    plan = out / "plan.toml"
    steps: list[tuple[str, list[str], Path | None]] = [
        ("plan", ["--preset", str(src), "--out", str(out), "--created",
                  "2026-01-01T00:00:00"], cache),
        ("status", ["status", str(plan)], cache),
        ("run --dry-run", ["run", "--dry-run", str(plan)], cache),
        ("status, cold", ["status", str(plan)], None),
        ("run --dry-run, cold", ["run", "--dry-run", str(plan)], None)]
    if slurm:
        steps.append(("slurm", ["slurm", str(plan), "--out", str(tmp / "slurm")], cache))
    return steps


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--slurm"]
    repeat = int(_option(args, "--repeat") or 1)
    against = _option(args, "--against")
    runs = int(args[0]) if args else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    trees = {"this tree": ROOT}
    try:
        if against is not None:
            trees[against] = tmp / "against"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                            str(trees[against]), against], check=True)
        src = tmp / "preset.toml"
        src.write_text(tomli_w.dumps(preset(runs)))
        print(f"{runs:,} runs on 256 cards; {load()}", flush=True)
        steps = {name: _steps(tmp / f"t{i}", src, "--slurm" in sys.argv)
                 for i, name in enumerate(trees)}
        for i, (name, _argv, _where) in enumerate(steps["this tree"]):
            times: dict[str, list[tuple[float, float]]] = {tree: [] for tree in trees}
            for _ in range(1 if name == "plan" else repeat):
                for n, (tree, root) in enumerate(trees.items()):  # one try of each in turn
                    _, argv, cache = steps[tree][i]
                    if cache is not None:
                        cache.mkdir(parents=True, exist_ok=True, mode=0o700)
                    times[tree].append(timed(argv, cache, root, tmp / f"t{n}"))
            target = TARGETS.get(name.split(",")[0])
            goal = f"(target <= {target:g} s)" if target else ""
            best = {tree: (min(t[0] for t in ts), min(t[1] for t in ts))
                    for tree, ts in times.items()}
            wall, cpu = best["this tree"]
            line = f"  {name:<20} {wall:6.2f} s wall, {cpu:6.2f} s CPU {goal}"
            if against is not None:
                old_wall = best[against][0]
                line += f"; {against}: {old_wall:.2f} s wall, ratio {wall / old_wall:.2f}"
            print(line, flush=True)
        size = (tmp / "t0" / "p" / "plan.toml").stat().st_size
        print(f"  plan.toml {size / 2**20:.1f} MiB; {load()}")
    finally:
        if against is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(trees[against])], check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

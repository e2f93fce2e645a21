"""Plans of a given size, end to end: prints figures beside the load average, asserts
nothing.

    python benchmarks/bench_scale.py [RUNS ...] [--slurm] [--repeat N] [--against REV]

For each RUNS (default 100,000, the most a matrix may expand to: 100 configurations ×
1,000 seeds; a renter's plan is a few thousand), a training matrix of RUNS runs on 256
cards, each command the plain argument vector of `train.py`. Each step is a fresh
`campaign-planner` process, timed from outside, after a headless plan of the shipped
`ablation-30d` (once, before the sizes):

1. planning it (`campaign-planner --preset ... --out ...`);
2. `campaign-planner status` on the plan, no journal yet;
3. `campaign-planner run --dry-run`;
4. `campaign-planner replan` an hour into the window (a new revision);
5. with `--slurm`, `campaign-planner slurm`: the array scripts and one manifest per run.

Each reading of the plan is its first on the machine (a revision that kept a cache of
checked plans is run with `CAMPAIGN_PLANNER_CACHE=off`, as on a machine the plan was copied
to). With `--repeat N`, each step runs N times and the fastest is shown (on a noisy machine
the least disturbed run is the closest to what the command costs).

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
from datetime import UTC, datetime
from pathlib import Path

import tomli_w

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.replan_support import T0, JournalWriter
from tests.run_fixtures import harness as h

AN_HOUR_IN = datetime.fromtimestamp(T0 + 3600, UTC).isoformat()
"""When `replan` replans: an hour after the journal's window started."""

TARGET = 1.0
"""Seconds a command on a renter's plan (a few thousand runs) should take at most."""


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


def timed(argv: list[str], root: Path = ROOT, where: Path | None = None
          ) -> tuple[float, float]:
    """Wall and CPU seconds of `campaign-planner ARGV` in a fresh process, the planner of
    the tree at `root`, started in folder `where` (on a loaded machine the CPU seconds tell
    more: they are what it costs on an idle one)."""
    env = {**os.environ, "CAMPAIGN_PLANNER_CACHE": "off", "PYTHONPATH": str(root)}
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


def _steps(tmp: Path, src: Path, slurm: bool) -> list[tuple[str, list[str]]]:
    """Each step's name and arguments, for a tree whose plan lives under `tmp`."""
    out = tmp / "p"
    plan = out / "plan.toml"
    steps = [
        ("plan", ["--preset", str(src), "--out", str(out), "--created",
                  "2026-01-01T00:00:00", "--force"]),
        ("status", ["status", str(plan)]),
        ("run --dry-run", ["run", "--dry-run", str(plan)]),
        ("replan", ["replan", str(plan), "--at", AN_HOUR_IN, "--out", str(tmp / "r"),
                    "--force"])]
    if slurm:
        steps.append(("slurm", ["slurm", str(plan), "--out", str(tmp / "slurm"), "--force"]))
    return steps


def compare(name: str, argvs: dict[str, list[str]], trees: dict[str, Path], repeat: int,
            where: dict[str, Path], target: float | None = TARGET) -> None:
    """One step on every tree, their tries in turn: the fastest of each, side by side."""
    times: dict[str, list[tuple[float, float]]] = {tree: [] for tree in trees}
    for _ in range(repeat):
        for tree, root in trees.items():  # one try of each in turn
            times[tree].append(timed(argvs[tree], root, where[tree]))
    best = {tree: (min(t[0] for t in ts), min(t[1] for t in ts)) for tree, ts in times.items()}
    wall, cpu = best["this tree"]
    line = f"  {name:<14} {wall:6.2f} s wall, {cpu:6.2f} s CPU"
    for tree in trees:
        if tree != "this tree":
            old_wall, old_cpu = best[tree]
            line += (f" | {tree}: {old_wall:6.2f} s wall, {old_cpu:6.2f} s CPU | ratio "
                     f"{wall / old_wall:.2f} wall, {cpu / old_cpu:.2f} CPU")
    flag = "" if target is None or wall <= target else f"  (over {target:g} s)"
    print(line + flag, flush=True)


def headless(tmp: Path, trees: dict[str, Path], repeat: int) -> None:
    """A headless plan of the shipped `ablation-30d`, written to a folder."""
    print(f"headless plan of ablation-30d; {load()}", flush=True)
    where = {tree: tmp / f"headless-t{i}" for i, tree in enumerate(trees)}
    for folder in where.values():
        folder.mkdir()
    argvs = {tree: ["--preset", "ablation-30d", "--out", str(where[tree] / "p"), "--force"]
             for tree in trees}
    compare("plan", argvs, trees, repeat, where)


def one_size(runs: int, tmp: Path, trees: dict[str, Path], repeat: int, slurm: bool) -> None:
    """Every step on a plan of `runs` runs, each tree's tries in turn."""
    src = tmp / f"preset-{runs}.toml"
    src.write_text(tomli_w.dumps(preset(runs)))
    print(f"{runs:,} runs on 256 cards; {load()}", flush=True)
    steps = {name: _steps(tmp / f"{runs}-t{i}", src, slurm) for i, name in enumerate(trees)}
    for i in range(len(trees)):
        (tmp / f"{runs}-t{i}").mkdir()
    where = {tree: tmp / f"{runs}-t{n}" for n, tree in enumerate(trees)}
    for i, (name, _argv) in enumerate(steps["this tree"]):
        compare(name, {tree: steps[tree][i][1] for tree in trees}, trees,
                1 if name == "plan" else repeat, where, None if name == "plan" else TARGET)
        if name == "plan":  # the executor's first events: what `replan` starts from
            for tree_steps in steps.values():
                plan_path = Path(tree_steps[0][1][3]) / "plan.toml"
                JournalWriter(h.load(plan_path), plan_path.parent)
    folder = tmp / f"{runs}-t0" / "p"
    sizes = ", ".join(f"{p.name} {p.stat().st_size / 2**20:.1f} MiB"
                      for p in (folder / "plan.toml", folder / "runs.jsonl") if p.exists())
    print(f"  {sizes}; {load()}", flush=True)


def main() -> None:
    args = [a for a in sys.argv[1:] if a != "--slurm"]
    repeat = int(_option(args, "--repeat") or 1)
    against = _option(args, "--against")
    sizes = [int(a) for a in args] or [100_000]
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    trees = {"this tree": ROOT}
    try:
        if against is not None:
            trees[against] = tmp / "against"
            subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "--quiet",
                            str(trees[against]), against], check=True)
        headless(tmp, trees, repeat)
        for runs in sizes:
            one_size(runs, tmp, trees, repeat, "--slurm" in sys.argv)
    finally:
        if against is not None:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                            str(trees[against])], check=False, capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()

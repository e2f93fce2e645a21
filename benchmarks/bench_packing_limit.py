"""Whether `--time-limit` bounds the whole command, and what cp-sat finds at scale: prints
figures, asserts nothing.

    python benchmarks/bench_packing_limit.py [limits in seconds, default 5 30]

A preset is generated from ablation-30d: 50 configurations (the baseline and 49 one-factor
variants of random step time) × 10 seeds = 500 runs, and an evaluation of 10 of the
configurations (100 more runs), on 16 cards for 30 days, sized so about nine seed sets fit
by card-hours. The plan command runs with `--solver cp-sat --time-limit L` for each limit
(`python -m planner`, so interpreter start and loading are in the figure); printed: the
wall-clock seconds of the whole command, its ratio to the limit, the fit line, and the
load average beside them. Then the same preset with the fast packer, for the complete seed
sets each finds.

Then the yes/no question behind capacity (`planner.packing.sets.sets_fit`): on
each shipped training preset (on its cards) and on ablation-7d grown to 167 seeds on 64
cards (1,002 runs), the most complete seed sets, asked one more set at a time until the
answer is no, with the seconds it took and whether it is proven. Last, twelve random
cases of five seed sets of five runs on 2-5 cards whose window is the shortest that holds
all 25 (found by exact search): the complete sets the fast packer and cp-sat find.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path
from typing import Any

import tomli_w

ROOT = Path(__file__).resolve().parent.parent


def scale_preset(configs: int = 50, seeds: int = 10, evaluated: int = 10, cards: int = 16,
                 sets: float = 10.35, seed: int = 20) -> dict[str, Any]:
    """ablation-30d grown to `configs` × `seeds` runs plus one evaluation of `evaluated`
    configurations, with steps chosen so that `sets` seed sets fill the card-hours."""
    rng = random.Random(seed)
    data = tomllib.loads((ROOT / "presets" / "ablation-30d.toml").read_text(encoding="utf-8"))
    a = data["ablation"]
    base = a["variants"][0]
    variants = []
    for i in range(configs - 1):
        v = {k: base[k] for k in ("step_time_s", "peak_memory_gib") if k in base}
        v = json.loads(json.dumps(v))
        v["name"] = f"v{i}"
        v["changes"] = {"data": f"mix-{i}"}
        v["step_time_s"]["value"] = round(rng.uniform(0.8, 6.0), 2)
        variants.append(v)
    a["variants"] = variants
    a["seeds"] = list(range(seeds))
    a["robustness"] = [dict(a["robustness"][0], applies_to=["baseline"] + [
        f"v{i}" for i in range(evaluated - 1)])]
    data["campaign"]["cards"] = cards
    step_sum = a["baseline"]["step_time_s"]["value"] + sum(
        v["step_time_s"]["value"] for v in variants)
    usable = 30 * 24 - 15.0
    a["steps"] = int(usable * cards * 3600 / (sets * step_sum))
    return data


def run(preset: Path, *args: str) -> tuple[float, dict[str, Any]]:
    """Wall-clock seconds of one plan command and its JSON summary."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-m", "planner", "--preset", str(preset), "--json",
                          *args], capture_output=True, text=True, env=env, check=True)
    spent = time.perf_counter() - t
    return spent, json.loads(out.stdout)["summary"]


def complete_sets(s: dict[str, Any]) -> int:
    """Seed sets complete from the first seed on, from the summary's table."""
    done = set.intersection(*(set(row["complete_seeds"]) for row in s["table"]))
    n = 0
    while n in done:
        n += 1
    return n


def _line(s: dict[str, Any]) -> str:
    sets = complete_sets(s)
    return (f"{s['matrix_runs_fit']} of {s['matrix_runs']} matrix runs, bound "
            f"{s['matrix_runs_upper_bound']}, optimal {s['optimal']}, complete sets {sets}")


def preset_jobs(name: str, seeds: int | None = None, cards: int | None = None
                ) -> tuple[list[Any], int, float]:
    """The packing jobs of a shipped preset (optionally with more seeds or cards), as the
    plan command builds them."""
    import planner.campaign as campaign
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    preset, _ = load_preset(name)
    training = preset.training
    assert training is not None
    update: dict[str, Any] = {}
    if seeds is not None:
        key = "ablation" if preset.ablation is not None else "adaptation"
        update[key] = training.model_copy(update={"seeds": list(range(seeds))})
    if cards is not None:
        update["campaign"] = preset.campaign.model_copy(update={"cards": cards})
    seen: list[tuple[list[Any], int, float]] = []
    real = campaign.pack

    def spy(jobs: Any, n: int, h: float, **kw: Any) -> Any:
        seen.append((list(jobs), n, h))
        return real(jobs, n, h, **kw)

    campaign.pack = spy  # type: ignore[assignment]
    try:
        campaign.plan_campaign(preset.model_copy(update=update), load_catalog())
    finally:
        campaign.pack = real  # type: ignore[assignment]
    return seen[0]


def first_sets(jobs: list[Any], k: int) -> list[Any]:
    """The runs of the first k seed sets with their evaluations, self-contained."""
    keep = [i for i, j in enumerate(jobs)
            if (j.matrix and j.seed < k) or (j.after >= 0 and jobs[j.after].seed < k)]
    at = {i: n for n, i in enumerate(keep)}
    return [jobs[i]._replace(after=at[jobs[i].after]) if jobs[i].after >= 0 else jobs[i]
            for i in keep]


def capacity(label: str, jobs: list[Any], n: int, h: float, limit: float) -> None:
    from planner.packing.sets import sets_fit

    t = time.monotonic()
    deadline = t + limit
    sets, answer = 0, None
    top = max(j.seed for j in jobs) + 1
    while sets < top:
        answer = sets_fit(first_sets(jobs, sets + 1), n, h, deadline)
        if answer is not True:
            break
        sets += 1
    proven = "proven" if answer is False or sets == top else "not proven"
    print(f"  {label:<34} {sets:>3} sets ({proven}) in {time.monotonic() - t:6.2f} s")


def tight_cases(limit: float) -> None:
    from planner.packing.fast import pack_fast
    from planner.packing.loads import fit_loads
    from planner.packing.objective import Job, score
    from planner.packing.pack import pack

    found = {"fast": 0, "cp-sat": 0}
    worst = 0.0
    for seed in range(12):
        rng = random.Random(seed)
        n = rng.randint(2, 5)
        lengths = [round(rng.uniform(20, 200), 3) for _ in range(5)]
        jobs = [Job(d, 1, s) for s in range(5) for d in lengths]
        units = [round(j.duration * 1000) for j in jobs]
        lo, hi = max(units), sum(units)
        while lo < hi:
            mid = (lo + hi) // 2
            if fit_loads(units, n, mid, time.monotonic() + 30)[0]:
                hi = mid
            else:
                lo = mid + 1
        h = lo / 1000
        found["fast"] += score(jobs, pack_fast(jobs, n, h))[0]
        t = time.monotonic()
        got = pack(jobs, n, h, solver="cp-sat", time_limit_s=limit)
        worst = max(worst, time.monotonic() - t)
        found["cp-sat"] += score(jobs, got.placements)[0]
    print(f"  12 cases, 60 seed sets: fast completes {found['fast']}, cp-sat "
          f"(limit {limit:g} s) {found['cp-sat']}; slowest cp-sat {worst:.2f} s")


def main() -> None:
    limits = [float(x) for x in sys.argv[1:]] or [5.0, 30.0]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "scale.toml"
        path.write_text(tomli_w.dumps(scale_preset()), encoding="utf-8")
        print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
        spent, s = run(path, "--solver", "fast")
        print(f"fast:              {spent:6.1f} s wall   {_line(s)}")
        for limit in limits:
            spent, s = run(path, "--solver", "cp-sat", "--time-limit", f"{limit:g}")
            print(f"cp-sat, limit {limit:4g} s: {spent:6.1f} s wall ({spent / limit:.2f}× the "
                  f"limit; load {os.getloadavg()[0]:.2f})   {_line(s)}")
    print(f"\ncapacity (most complete seed sets), limit 5 s each; load "
          f"{os.getloadavg()[0]:.2f}")
    for name in ("ablation-3d", "ablation-7d", "ablation-30d", "adaptation-30d"):
        capacity(f"{name} (40 seeds asked)", *preset_jobs(name, seeds=40), 5.0)
    capacity("ablation-7d, 167 seeds, 64 cards", *preset_jobs("ablation-7d", 167, 64), 5.0)
    print("\nfive seed sets that fit exactly")
    tight_cases(5.0)
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

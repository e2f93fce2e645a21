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
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

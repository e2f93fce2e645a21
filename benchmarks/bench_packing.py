"""How close each packer comes to the optimum, and how fast: prints figures, asserts nothing.

    python benchmarks/bench_packing.py [instances per family, default 200]

Random small instances (up to 8 runs, 1-4 cards) in four families: runs on one card;
runs on 1 or 2 cards; with robustness evaluations after their training run; and the last
made tight (two or three seeds, durations in hundredths of an hour, a window of 30-90% of
the work). Each is
solved by brute force (the optimum), today's list scheduler, the fast packer and CP-SAT
(when OR-Tools is installed). Printed per family and path: the fraction of instances
optimal by count (complete seed sets, matrix runs, evaluations all equal the optimum's)
and by card-hours (placed card-hours at least those of the optimum the brute force found:
the objective counts runs, so an optimum by count may hold fewer card-hours), the worst
and median ratio of runs placed to the optimum's, the mean time per instance, and for
CP-SAT the fraction it proved optimal itself.

Then the fast packer on a 1,000-run matrix (125 configurations × 8 seeds on 16 cards),
and `plan_campaign` on a preset grown to 1,002 runs (target: a replan in at most 50 ms).
"""

from __future__ import annotations

import os
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.packing.fast import pack_fast
from planner.packing.pack import Job, counts, have_cp_sat, pack, score
from planner.packing.schedule import Placement, schedule
from tests.packing_oracle import check, instance, optimum_packing

Packer = Callable[[list[Job], int, float], Sequence[Placement | None]]
FAMILIES = {"1 card per run": dict(wide=False, evals=False),
            "1 or 2 cards per run": dict(wide=True, evals=False),
            "with evaluations": dict(wide=True, evals=True),
            "tight, with evaluations": dict(wide=True, evals=True, tight=True)}


def _list(jobs: list[Job], n: int, h: float) -> Sequence[Placement | None]:
    return schedule([j.duration for j in jobs], [j.cards for j in jobs], n, h,
                    [j.after for j in jobs])


PROVEN: list[bool] = []


def _cp_sat(jobs: list[Job], n: int, h: float) -> Sequence[Placement | None]:
    got = pack(jobs, n, h, solver="cp-sat", time_limit_s=5.0, exact_times=True)
    PROVEN.append(got.optimal is True)
    return got.placements


def _card_hours(jobs: Sequence[Job], placed: Sequence[Placement | None]) -> float:
    return sum(j.duration * j.cards for j, p in zip(jobs, placed, strict=True) if p is not None)


def family(name: str, n: int, packers: dict[str, Packer]) -> None:
    rng = random.Random(name)
    cases = [instance(rng, **FAMILIES[name]) for _ in range(n)]
    best = [optimum_packing(*c) for c in cases]
    print(f"\n{name}: {n} instances")
    print(f"  {'path':<15} {'optimal (count)':>16} {'optimal (card-h)':>17} {'worst':>6} "
          f"{'median':>7} {'ms/instance':>12} {'proven':>7}")
    for label, fn in packers.items():
        by_count = by_ch = 0
        ratios, spent = [], 0.0
        PROVEN.clear()
        for (jobs, cards, h), (key, opt) in zip(cases, best, strict=True):
            t = time.perf_counter()
            got = fn(jobs, cards, h)
            spent += time.perf_counter() - t
            check(jobs, cards, h, got)
            mine = score(jobs, got)
            by_count += counts(mine) == counts(key)
            by_ch += _card_hours(jobs, got) >= _card_hours(jobs, opt) - 1e-6
            want = key[1] + key[2]
            ratios.append((mine[1] + mine[2]) / want if want else 1.0)
        print(f"  {label:<15} {by_count / n:>16.1%} {by_ch / n:>17.1%} {min(ratios):>6.2f} "
              f"{statistics.median(ratios):>7.2f} {spent / n * 1e3:>12.2f} "
              f"{f'{sum(PROVEN) / len(PROVEN):.1%}' if PROVEN else '':>7}")


def thousand() -> None:
    rng = random.Random(1000)
    jobs = [Job(rng.uniform(5, 40), 1, s) for s in range(8) for _ in range(125)]
    for horizon in (1500.0, 1200.0):
        times = []
        for _ in range(7):
            t = time.perf_counter()
            got = pack_fast(jobs, 16, horizon)
            times.append(time.perf_counter() - t)
        key = score(jobs, got)
        print(f"\n1,000 runs on 16 cards, {horizon:g} h: fast packer {key[1]} placed, "
              f"{key[0]} complete seed sets; median {statistics.median(times) * 1e3:.1f} ms "
              f"(min {min(times) * 1e3:.1f})")


def replan() -> None:
    from planner.campaign import plan_campaign
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    preset, _ = load_preset("ablation-7d")
    assert preset.training is not None
    training = preset.training.model_copy(update={"seeds": list(range(167))})
    big = preset.model_copy(update={"ablation": training, "campaign": preset.campaign.model_copy(
        update={"cards": 64})})
    catalog = load_catalog()
    plan_campaign(big, catalog)
    times = []
    for _ in range(7):
        t = time.perf_counter()
        plan = plan_campaign(big, catalog)
        times.append(time.perf_counter() - t)
    print(f"plan_campaign, ablation-7d with 167 seeds: {plan.summary.runs_total} runs on 64 "
          "cards, 7 days: "
          f"{plan.summary.matrix_runs_fit} fit; median {statistics.median(times) * 1e3:.1f} ms "
          f"(min {min(times) * 1e3:.1f})")


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    print(f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs")
    packers: dict[str, Packer] = {"list scheduler": _list, "fast": pack_fast}
    if have_cp_sat():
        packers["cp-sat"] = _cp_sat
    else:
        print("OR-Tools not installed: the cp-sat path is not measured")
    for name in FAMILIES:
        family(name, n, packers)
    thousand()
    replan()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()

"""How often each packer finds the optimum on generated campaigns, and how fast: prints the
shares and times beside the load average, asserts nothing.

    python benchmarks/bench_packing_quality.py [instances per family, default 150]

Seeded families (`tests.packing_oracle.campaign`: 1-4 cards, up to 8 runs a set, a
configuration as long in every seed, evaluations after every run, a window of 30-95% of
the work), each solved by the exact search of `tests.packing_oracle` (the optimum of
complete seed sets, then matrix runs, then evaluations), the fast packer and cp-sat at
`--time-limit 5`:

1. runs on 1-4 cards, 0-3 evaluations a run;
2. runs on 2 or 4 cards, 2-3 evaluations a run (where gaps on some cards are wasted);
3. larger campaigns than the exact search takes (4-8 cards, 2 or 4 cards a run, 2-4 seeds
   of 3-8 configurations, 1-4 evaluations a run): fast against cp-sat's answer where cp-sat
   proves it optimal.

Printed per family and packer: the share of instances whose counts equal the optimum's,
any false `optimal` claim, and the mean and worst time per instance. Then the 1,000-run
case: 100 configurations × 10 seeds on 64 cards in a window of 30 days, sized so that 9
whole seed sets fill 97-99% of the card-hours (they fit: `tests/test_packing_quality.py`
packs them), for a few seeds of the generator: the complete sets each packer finds and
its time.
"""

from __future__ import annotations

import os
import random
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.packing.pack import Job, counts, have_cp_sat, pack, score
from planner.packing.schedule import Placement
from tests.packing_oracle import campaign, check, optimum

Packer = Callable[[list[Job], int, float], tuple[Sequence[Placement | None], bool | None]]
FAMILIES: dict[str, dict[str, object]] = {
    "1-4 cards a run, 0-3 evaluations": {},
    "2 or 4 cards a run, 2-3 evaluations": {"widths": (2, 4), "evals": (2, 3)},
}
WINDOW_H = 30 * 24 - 8.0
"""A 30-day window less a few hours of setup."""


def load() -> str:
    """The 1-, 5- and 15-minute load averages."""
    one, five, fifteen = os.getloadavg()
    return f"load {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def _fast(jobs: list[Job], n: int, h: float) -> tuple[Sequence[Placement | None], bool | None]:
    got = pack(jobs, n, h)
    return got.placements, got.optimal


def _cp_sat(jobs: list[Job], n: int, h: float) -> tuple[Sequence[Placement | None], bool | None]:
    got = pack(jobs, n, h, solver="cp-sat", time_limit_s=5.0)
    return got.placements, got.optimal


def family(name: str, n: int, packers: dict[str, Packer]) -> None:
    rng = random.Random(name)
    cases = [campaign(rng, **FAMILIES[name]) for _ in range(n)]  # type: ignore[arg-type]
    t = time.perf_counter()
    best = [counts(optimum(*c)) for c in cases]
    print(f"\n{name}: {n} instances (exact search {time.perf_counter() - t:.1f} s)")
    print(f"  {'packer':<8} {'equal to the optimum':>21} {'false optimal':>14} "
          f"{'mean ms':>8} {'worst ms':>9}")
    for label, fn in packers.items():
        equal = false = 0
        times: list[float] = []
        for (jobs, cards, h), want in zip(cases, best, strict=True):
            t = time.perf_counter()
            placed, optimal = fn(jobs, cards, h)
            times.append(time.perf_counter() - t)
            check(jobs, cards, h, placed)
            got = counts(score(jobs, placed))
            equal += got == want
            false += optimal is True and got != want
        print(f"  {label:<8} {f'{equal} of {n} ({equal / n:.0%})':>21} {false:>14} "
              f"{sum(times) / n * 1e3:>8.1f} {max(times) * 1e3:>9.1f}")


def larger(rng: random.Random) -> tuple[list[Job], int, float]:
    """A campaign too large for the exact search: 4-8 cards, 2 or 4 cards a run, 2-4 seeds
    of 3-8 configurations, 1-4 evaluations a run, a window of 40-90% of the work."""
    width = rng.choice((2, 4))
    n_cards = rng.choice([c for c in (4, 6, 8) if c >= width])
    hours = [round(rng.uniform(1, 24), 2) for _ in range(rng.randint(3, 8))]
    tests = [round(rng.uniform(0.2, 4), 2) for _ in range(rng.randint(1, 4))]
    jobs = [Job(d, width, s) for s in range(rng.randint(2, 4)) for d in hours]
    for r in range(len(jobs)):
        jobs += [Job(e, width, -1, r) for e in tests]
    total = sum(j.duration * j.cards for j in jobs)
    return jobs, n_cards, round(rng.uniform(0.4, 0.9) * total / n_cards, 1)


def against_cp_sat(n: int, packers: dict[str, Packer]) -> None:
    """Fast against cp-sat's own answer where cp-sat proves it optimal."""
    rng = random.Random("larger")
    cases = [larger(rng) for _ in range(n)]
    print(f"\nlarger campaigns (2-4 seeds × 3-8 configurations, 1-4 evaluations a run, 2 or 4 "
          f"cards a run on 4-8 cards): {n} instances, against cp-sat's proven optimum")
    proven = equal = 0
    spent = {label: 0.0 for label in packers}
    for jobs, cards, h in cases:
        got = {}
        for label, fn in packers.items():
            t = time.perf_counter()
            got[label] = fn(jobs, cards, h)
            spent[label] += time.perf_counter() - t
            check(jobs, cards, h, got[label][0])
        placed, optimal = got["cp-sat"]
        if optimal is True:
            proven += 1
            equal += counts(score(jobs, got["fast"][0])) == counts(score(jobs, placed))
    print(f"  cp-sat proved {proven} of {n} optimal; fast equals it in {equal} of {proven} "
          f"({equal / max(proven, 1):.0%}); mean ms: "
          + ", ".join(f"{k} {v / n * 1e3:.1f}" for k, v in spent.items()))


def thousand(seed: int) -> tuple[list[Job], float]:
    """100 configurations × 10 seeds on 64 cards, durations scaled so that 9 sets fill
    97-99% of the window's card-hours."""
    rng = random.Random(seed)
    raw = [rng.uniform(10, 100) for _ in range(100)]
    fill = rng.uniform(0.97, 0.99)
    scale = WINDOW_H * 64 * fill / (9 * sum(raw))
    hours = [round(d * scale, 2) for d in raw]
    return [Job(d, 1, s) for s in range(10) for d in hours], WINDOW_H


def big(packers: dict[str, Packer], seeds: Sequence[int]) -> None:
    print(f"\n1,000 runs (100 configurations × 10 seeds) on 64 cards, {WINDOW_H:g} h; {load()}")
    for seed in seeds:
        jobs, h = thousand(seed)
        fill = sum(j.duration for j in jobs if j.seed < 9) / (64 * h)
        line = f"  generator seed {seed} (9 sets fill {fill:.1%}):"
        for label, fn in packers.items():
            t = time.perf_counter()
            placed, _ = fn(jobs, 64, h)
            line += f" {label} {score(jobs, placed)[0]} sets ({time.perf_counter() - t:.2f} s)"
        print(line, flush=True)


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 150
    print(load())
    packers: dict[str, Packer] = {"fast": _fast}
    if have_cp_sat():
        packers["cp-sat"] = _cp_sat
    else:
        print("OR-Tools not installed: the cp-sat path is not measured")
    for name in FAMILIES:
        family(name, n, packers)
    if "cp-sat" in packers:
        against_cp_sat(max(10, n // 3), packers)
    big(packers, range(3))
    print(load())


if __name__ == "__main__":
    main()

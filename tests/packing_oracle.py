"""Reference answers for packing tests: random small instances, a brute-force optimum, and
the invariants every packing must hold. Written apart from the packers, on a card-count
profile rather than card indices, so that a bug in one is not copied into the other."""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence

from planner.packing.pack import EPS_H, Job, Key, score
from planner.packing.schedule import Placement


def instance(rng: random.Random, *, max_jobs: int = 8, wide: bool = True,
             evals: bool = True, tight: bool = False) -> tuple[list[Job], int, float]:
    """A random small instance: (jobs, cards, horizon). `tight`: at least two seeds,
    durations in hundredths of an hour, and a window of 30-90% of the work."""
    n_cards = rng.randint(1, 4)
    seeds = rng.randint(2 if tight else 1, 3)
    configs = rng.randint(2 if tight else 1, max(1, max_jobs // seeds))
    width = rng.choice([1, 2]) if wide and n_cards > 1 else 1

    def hours() -> float:
        if tight:
            return round(rng.uniform(1, 12), 2)
        return rng.choice([0.5, 1.0, 1.1, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.5, 7.0, 8.0,
                           9.5, 12.0])

    jobs = [Job(duration=hours(), cards=width, seed=s)
            for s in range(seeds) for _ in range(configs)]
    jobs = jobs[:max_jobs]
    if evals:
        for _ in range(rng.randint(0, max_jobs - len(jobs))):
            jobs.append(Job(duration=rng.choice([0.25, 0.5, 1.0]), cards=width, seed=-1,
                            after=rng.randrange(len(jobs))))
    total = sum(j.duration * j.cards for j in jobs)
    share = rng.uniform(0.3, 0.9) if tight else rng.uniform(0.4, 1.0)
    horizon = round(share * total / n_cards, 2 if tight else 1) or 1.0
    return jobs, n_cards, horizon


def _fits(placed: list[tuple[float, float, int]], t: float, d: float, k: int, n: int) -> bool:
    points = [t] + [s for s, _, _ in placed if t < s < t + d - EPS_H]
    for x in points:
        used = sum(c for s, e, c in placed if s <= x + EPS_H and e > x + EPS_H)
        if used + k > n:
            return False
    return True


def optimum(jobs: Sequence[Job], n_cards: int, horizon: float) -> Key:
    """The best objective over every schedule (see `optimum_packing`)."""
    return optimum_packing(jobs, n_cards, horizon)[0]


def optimum_packing(jobs: Sequence[Job], n_cards: int, horizon: float
                    ) -> tuple[Key, list[Placement | None]]:
    """The best objective over every schedule and one packing reaching it (card indices
    left empty), by depth-first search over which run to start next, each at its earliest
    time on the card-count profile (active schedules, which hold an optimum of every
    criterion here)."""
    none: list[Placement | None] = [None] * len(jobs)
    best: list[tuple[Key, list[Placement | None]]] = [(score(jobs, none), none)]
    seen: set[frozenset[tuple[int, float]]] = set()

    def go(starts: dict[int, float], placed: list[tuple[float, float, int]]) -> None:
        state = frozenset((i, round(s, 6)) for i, s in starts.items())
        if state in seen:
            return
        seen.add(state)
        got: list[Placement | None] = [
            Placement(starts[i], starts[i] + jobs[i].duration, ()) if i in starts else None
            for i in range(len(jobs))]
        key = score(jobs, got)
        if key > best[0][0]:
            best[0] = (key, got)
        for i, j in enumerate(jobs):
            if i in starts or j.cards > n_cards or not math.isfinite(j.duration):
                continue
            ready = 0.0
            if j.after >= 0:
                if j.after not in starts:
                    continue
                ready = starts[j.after] + jobs[j.after].duration
            for t in sorted({ready, *(e for _, e, _ in placed if e > ready)}):
                if t + j.duration > horizon + EPS_H:
                    break
                if _fits(placed, t, j.duration, j.cards, n_cards):
                    go({**starts, i: t}, [*placed, (t, t + j.duration, j.cards)])
                    break

    go({}, [])
    return best[0]


def check(jobs: Sequence[Job], n_cards: int, horizon: float,
          placed: Sequence[Placement | None]) -> None:
    """Every invariant of a packing; raises AssertionError naming the broken one."""
    assert len(placed) == len(jobs)
    by_card: dict[int, list[tuple[float, float]]] = {}
    for i, (j, p) in enumerate(zip(jobs, placed, strict=True)):
        if p is None:
            continue
        assert len(set(p.cards)) == j.cards, f"run {i} holds {p.cards}, needs {j.cards}"
        assert all(0 <= c < n_cards for c in p.cards), f"run {i} on a card not rented"
        assert abs(p.end - p.start - j.duration) < 1e-9, f"run {i} lasts the wrong time"
        assert p.start >= -EPS_H and p.end <= horizon + EPS_H, f"run {i} outside the window"
        if j.after >= 0:
            before = placed[j.after]
            assert before is not None, f"evaluation {i} placed without its run"
            assert p.start >= before.end - EPS_H, f"evaluation {i} starts before its run ends"
        for c in p.cards:
            by_card.setdefault(c, []).append((p.start, p.end))
    for c, spans in by_card.items():
        spans.sort()
        for (_, e), (s, _) in itertools.pairwise(spans):
            assert s >= e - EPS_H, f"card {c} holds two runs at once"


def campaign(rng: random.Random, *, max_jobs: int = 9, widths: Sequence[int] = (1, 2, 3, 4),
             evals: tuple[int, int] = (0, 3)) -> tuple[list[Job], int, float]:
    """A random small campaign as a preset expands one: (jobs, cards, horizon). 1-4 cards,
    `widths` cards a run (no more than rented), 1-3 seeds of 1-8 configurations (a
    configuration lasts as long in every seed), `evals` (fewest, most) evaluations after
    every run, durations in hundredths of an hour, and a window of 30-95% of the work; at
    most `max_jobs` runs and evaluations in all, so the exact search stays quick. Runs seed
    by seed, then evaluations seed by seed, as the matrix lists them."""
    width = rng.choice(widths)
    n_cards = rng.randint(width, 4)
    per_run = rng.randint(*evals)
    seeds = rng.randint(1, 3)
    configs = rng.randint(1, 8)
    while seeds * configs * (1 + per_run) > max_jobs:
        if configs > 1 and (seeds == 1 or rng.random() < 0.5):
            configs -= 1
        elif seeds > 1:
            seeds -= 1
        else:
            per_run -= 1
    hours = [round(rng.uniform(0.5, 12), 2) for _ in range(configs)]
    tests = [round(rng.uniform(0.1, 3), 2) for _ in range(per_run)]
    jobs = [Job(duration=d, cards=width, seed=s) for s in range(seeds) for d in hours]
    for r in range(len(jobs)):
        jobs += [Job(duration=e, cards=width, seed=-1, after=r) for e in tests]
    total = sum(j.duration * j.cards for j in jobs)
    horizon = round(rng.uniform(0.3, 0.95) * total / n_cards, 1) or 1.0
    return jobs, n_cards, horizon

"""What a packing is and how two packings compare: the jobs to place, the lexicographic key
of the objective written out in `planner.packing.pack`, and the bounds both packers
share."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, NamedTuple

from planner.packing.schedule import EPS_H, Placement

__all__ = ["EPS_H", "Job", "Key", "Packing", "Placement", "Solver", "capacity_bound", "counts",
           "runnable", "score", "trivially_optimal"]

Solver = Literal["fast", "cp-sat"]


class Job(NamedTuple):
    """One run to place: hours, cards held at once, seed layer, and the run it follows."""

    duration: float
    """Hours on its cards (inf: it can never run, e.g. it does not fit memory)."""
    cards: int
    """Cards it holds for its whole duration."""
    seed: int = 0
    """Seed layer of a matrix run (0 = first seed), -1 for an evaluation."""
    after: int = -1
    """Index of the matrix run it evaluates (-1 for matrix runs)."""

    @property
    def matrix(self) -> bool:
        """Whether it is a matrix (training) run rather than an evaluation."""
        return self.after < 0 and self.seed >= 0


Key = tuple[int, int, int, float, float]
"""The objective as a tuple to maximize: sets, matrix runs, evaluations, −first end, −last."""


class Packing(NamedTuple):
    """A packing and what is known about it."""

    placements: list[Placement | None]
    """Per job: where it runs, or None when it is left out."""
    optimal: bool | None
    """True: proven optimal for criteria 1-3; False: the solver stopped with a gap; None:
    unknown (no solver ran and the fast packer cannot prove it)."""
    matrix_bound: int
    """No schedule places more matrix runs than this."""
    solver: Solver
    """Which solver produced the placements' proof (or the fast packer alone)."""


def score(jobs: Sequence[Job], placed: Sequence[Placement | None]) -> Key:
    """The objective of a packing, as a tuple where larger is better."""
    # One pass: the fast packer scores every order it tries.
    layer_end: dict[int, float] = {}
    broken: set[int] = set()
    matrix = evals = 0
    last = 0.0
    for j, p in zip(jobs, placed, strict=True):
        if j.after < 0 and j.seed >= 0:
            if p is None:
                broken.add(j.seed)
                layer_end.setdefault(j.seed, 0.0)
                continue
            matrix += 1
            layer_end[j.seed] = max(layer_end.get(j.seed, 0.0), p.end)
        elif p is not None:
            evals += 1
        if p is not None and p.end > last:
            last = p.end
    sets, first = 0, 0.0
    for seed in sorted(layer_end):
        if seed in broken:
            break
        if sets == 0:
            first = layer_end[seed]
        sets += 1
    return (sets, matrix, evals, -round(first, 6), -round(last, 6))


def counts(key: Key) -> tuple[int, int, int]:
    """Criteria 1-3 of a key: what the optimality claim is about."""
    return key[0], key[1], key[2]


def capacity_bound(jobs: Sequence[Job], n_cards: int, horizon: float) -> int:
    """Matrix runs that could fit by card-hours alone: a true upper bound on any schedule.

    Each matrix run that can run at all (it fits the window alone and on the cards) takes
    duration × cards card-hours; the smallest ones first fill the window's card-hours.
    """
    need = sorted(j.duration * j.cards for j in jobs
                  if j.matrix and j.cards <= n_cards and j.duration <= horizon + EPS_H)
    room = n_cards * horizon + EPS_H * n_cards
    fit = 0
    for ch in need:
        room -= ch
        if room < -EPS_H:
            break
        fit += 1
    return fit


def runnable(jobs: Sequence[Job], n_cards: int, horizon: float) -> list[bool]:
    """Per job: whether it could run at all, alone in the window (with the run it follows)."""
    out: list[bool] = []
    for j in jobs:
        ok = j.cards <= n_cards and math.isfinite(j.duration)
        if ok and j.after >= 0:
            ok = out[j.after] and jobs[j.after].duration + j.duration <= horizon + EPS_H
        out.append(ok and j.duration <= horizon + EPS_H)
    return out


def trivially_optimal(jobs: Sequence[Job], placed: Sequence[Placement | None], n_cards: int,
                      horizon: float) -> bool:
    """Whether every job that could run at all is placed (no schedule counts more)."""
    return all(p is not None or not ok for ok, p in zip(runnable(jobs, n_cards, horizon), placed,
                                                        strict=True))

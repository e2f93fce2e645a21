"""From a training matrix to packing jobs, and why a run was left out, in true words.

A reason states facts about the window and the packing found, never the fate of one
greedy placement: how long the run is, how much room the runs placed before it leave,
and the longest stretch in which enough cards are idle at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.matrix import RunSpec
from planner.packing import EPS_H, Job, Packing
from planner.schedule import Placement


def jobs_of(specs: Sequence[RunSpec], seeds: Sequence[int]) -> list[Job]:
    """Packing jobs of a training matrix: a run that does not fit memory lasts forever."""
    layer = {s: n for n, s in enumerate(seeds)}
    return [
        Job(duration=s.duration_h if s.config.fits else float("inf"), cards=s.cards,
            seed=-1 if s.depends_on >= 0 else layer[s.seed], after=s.depends_on)
        for s in specs
    ]


def _longest_free(placed: Sequence[Placement | None], n_cards: int, horizon: float,
                  k: int) -> float:
    """Longest stretch of [0, horizon] in which at least k cards are idle at once."""
    events: list[tuple[float, int]] = []
    for p in placed:
        if p is not None:
            events += [(p.start, -len(p.cards)), (p.end, len(p.cards))]
    events.sort(key=lambda e: (e[0], -e[1]))
    free, since, best = n_cards, 0.0, 0.0
    for t, delta in events:
        t = min(max(t, 0.0), horizon)
        if free >= k:
            best = max(best, t - since)
        free += delta
        since = t
    if free >= k:
        best = max(best, horizon - since)
    return best


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


def why_not(i: int, ids: Sequence[str], jobs: Sequence[Job], packing: Packing, n_cards: int,
            horizon: float) -> str:
    """Why job `i` is not in `packing`: what is true of the window and the runs placed."""
    job, placed = jobs[i], packing.placements
    if job.after >= 0 and placed[job.after] is None:
        return f"evaluates {ids[job.after]}, which does not fit"
    if job.duration > horizon + EPS_H:
        return (f"needs {job.duration:.1f} h but the usable window is {horizon:.1f} h: it "
                "cannot finish even alone")
    if job.after >= 0:
        before = placed[job.after]
        assert before is not None
        room = horizon - before.end
        if job.duration > room + EPS_H:
            return (f"needs {job.duration:.1f} h after {ids[job.after]}, which ends "
                    f"{room:.1f} h before the usable window closes")
    need = job.duration * job.cards
    busy = sum((p.end - p.start) * len(p.cards) for p in placed if p is not None)
    idle = n_cards * horizon - busy
    stretch = _longest_free(placed, n_cards, horizon, job.cards)
    on = "" if job.cards == 1 else f" on {job.cards} cards at once"
    sets = [j for j in jobs if j.matrix]
    complete = _complete_sets(jobs, placed)
    if job.matrix and complete and job.seed >= complete:
        set_ch = sum((p.end - p.start) * len(p.cards) for j, p in zip(jobs, placed, strict=True)
                     if p is not None and j.matrix and j.seed < complete)
        left = n_cards * horizon - set_ch
        if need > left + EPS_H:
            return (f"the {_plural(complete, 'complete seed set')} leave {left:.1f} "
                    f"card-hours; this run needs {need:.1f}")
    placed_n = sum(1 for p in placed if p is not None)
    text = (f"needs {job.duration:.1f} h{on}; the {_plural(placed_n, 'run')} placed leave "
            f"{idle:.1f} idle card-hours, the longest stretch with "
            f"{_plural(job.cards, 'card')} idle is {stretch:.1f} h")
    matrix_n = sum(1 for j, p in zip(jobs, placed, strict=True) if j.matrix and p is not None)
    if job.matrix and packing.matrix_bound <= matrix_n:
        text += "; no schedule fits more matrix runs"
    elif job.matrix and packing.matrix_bound < len(sets):
        text += (f"; no schedule fits more than {packing.matrix_bound} of the "
                 f"{len(sets)} matrix runs")
    return text


def _complete_sets(jobs: Sequence[Job], placed: Sequence[Placement | None]) -> int:
    layers: dict[int, bool] = {}
    for j, p in zip(jobs, placed, strict=True):
        if j.matrix:
            layers[j.seed] = layers.get(j.seed, True) and p is not None
    n = 0
    for seed in sorted(layers):
        if not layers[seed]:
            break
        n += 1
    return n

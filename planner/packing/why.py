"""From a training matrix to packing jobs, and why a run was left out, in true words.

A reason states facts about the window and the packing found, never the fate of one
greedy placement: how long the run is, how much room the runs placed before it leave,
and the longest stretch in which enough cards are idle at once.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.packing.pack import EPS_H, Job, Packing
from planner.packing.schedule import Placement
from planner.spec.matrix import RunSpec


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


def _apart(*values: float) -> list[str]:
    """The values with one decimal, or as many more (up to six) as it takes for values that
    differ to read differently: a reason never shows a run needing what the room holds."""
    for digits in range(1, 7):
        text = [f"{v:.{digits}f}" for v in values]
        if all(text[i] != text[j] or abs(values[i] - values[j]) < 1e-9
               for i in range(len(values)) for j in range(i)):
            return text
    return text


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' if n != 1 else ''}"


class Reasons:
    """Why runs are not in a packing: the facts about the window worked out once, so that a
    thousand runs left out cost no more than one."""

    def __init__(self, ids: Sequence[str], jobs: Sequence[Job], packing: Packing,
                 n_cards: int, horizon: float) -> None:
        self.ids, self.jobs, self.packing = ids, jobs, packing
        self.n_cards, self.horizon = n_cards, horizon
        placed = packing.placements
        busy = sum((p.end - p.start) * len(p.cards) for p in placed if p is not None)
        self.idle = n_cards * horizon - busy
        self.placed_n = sum(1 for p in placed if p is not None)
        self.matrix_total = sum(1 for j in jobs if j.matrix)
        self.matrix_n = sum(1 for j, p in zip(jobs, placed, strict=True)
                            if j.matrix and p is not None)
        self.complete = _complete_sets(jobs, placed)
        set_ch = sum((p.end - p.start) * len(p.cards) for j, p in zip(jobs, placed, strict=True)
                     if p is not None and j.matrix and j.seed < self.complete)
        self.after_sets = n_cards * horizon - set_ch
        self._stretch: dict[int, float] = {}

    def stretch(self, k: int) -> float:
        """Longest stretch with k cards idle at once."""
        if k not in self._stretch:
            self._stretch[k] = _longest_free(self.packing.placements, self.n_cards,
                                             self.horizon, k)
        return self._stretch[k]

    def why(self, i: int) -> str:
        """Why job `i` is left out: what is true of the window and the runs placed."""
        job, placed, ids, horizon = self.jobs[i], self.packing.placements, self.ids, self.horizon
        if job.after >= 0 and placed[job.after] is None:
            return f"evaluates {ids[job.after]}, which does not fit"
        if job.duration > horizon + EPS_H:
            d, w = _apart(job.duration, horizon)
            return (f"needs {d} h but the usable window is {w} h: it "
                    "cannot finish even alone")
        if job.after >= 0:
            before = placed[job.after]
            assert before is not None
            room = horizon - before.end
            if job.duration > room + EPS_H:
                d, r = _apart(job.duration, room)
                return (f"needs {d} h after {ids[job.after]}, which ends "
                        f"{r} h before the usable window closes")
        need = job.duration * job.cards
        if job.matrix and self.complete and job.seed >= self.complete \
                and need > self.after_sets + EPS_H:
            left, n = _apart(self.after_sets, need)
            return (f"the {_plural(self.complete, 'complete seed set')} leave "
                    f"{left} card-hours; this run needs {n}")
        on = "" if job.cards == 1 else f" on {job.cards} cards at once"
        d, idle, stretch = _apart(job.duration, self.idle, self.stretch(job.cards))
        text = (f"needs {d} h{on}; the {_plural(self.placed_n, 'run')} placed "
                f"leave {idle} idle card-hours, the longest stretch with "
                f"{_plural(job.cards, 'card')} idle is {stretch} h")
        bound = self.packing.matrix_bound
        if job.matrix and bound <= self.matrix_n:
            text += "; no schedule fits more matrix runs"
        elif job.matrix and bound < self.matrix_total:
            text += (f"; no schedule fits more than {bound} of the {self.matrix_total} "
                     "matrix runs")
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

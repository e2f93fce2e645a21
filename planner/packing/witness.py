"""Schedules that proved a count of complete seed sets, kept for the plan of that count.

The capacity search proves "K sets fit" by finding a schedule of K sets' runs; planning K
seeds packs the same runs again, and a packer given less time (or an unlucky search) may
not find it a second time. So the proof's schedule is kept, in this process, under the
exact question it answers (the runs, the cards, the window), and `pack` starts from it:
"Fill to capacity" in the interactive planner, or a plan of the capacity in the same
process, places every run. A few dozen are kept, the most recent.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.packing.objective import Job
from planner.packing.schedule import Placement

KEEP = 32
"""Schedules kept, the most recently proved."""

# Newest last: (runs, cards, window, schedule). Kept by reference to copies, never hashed:
# the capacity search proves counts by the hundred in `advise`, and most are never planned.
_kept: list[tuple[list[Job], int, float, list[Placement | None]]] = []


def remember(jobs: Sequence[Job], n_cards: int, horizon: float,
             placed: Sequence[Placement | None]) -> None:
    """Keep `placed`, a schedule placing every one of `jobs`, as the witness for them."""
    if len(placed) != len(jobs) or any(p is None for p in placed):
        return
    _kept.append((list(jobs), n_cards, horizon, list(placed)))
    del _kept[:-KEEP]


def recall(jobs: Sequence[Job], n_cards: int, horizon: float
           ) -> list[Placement | None] | None:
    """The witness kept for exactly these runs, cards and window, or None."""
    for runs, cards, window, placed in reversed(_kept):
        if cards == n_cards and window == horizon and len(runs) == len(jobs) \
                and all(a == b for a, b in zip(runs, jobs, strict=True)):
            return list(placed)
    return None


def forget() -> None:
    """Let every kept schedule go."""
    _kept.clear()

"""Schedules that proved a count of complete seed sets, kept for the plan of that count.

The capacity search proves "K sets fit" by finding a schedule of K sets' runs; planning K
seeds packs the same runs again, and a packer given less time (or an unlucky search) may
not find it a second time. So the proof's schedule is kept, in this process, under the
exact question it answers (the runs, the cards, the window), and `pack` starts from it:
"Fill to capacity" in the interactive planner, or a plan of the capacity in the same
process, places every run. A few dozen are kept, the most recent.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence

from planner.planning.objective import Job
from planner.planning.schedule import Placement

KEEP = 32
"""Schedules kept, the most recently proved or used."""

_Key = tuple[tuple[Job, ...], int, float]
_kept: OrderedDict[_Key, tuple[Placement | None, ...]] = OrderedDict()


def remember(jobs: Sequence[Job], n_cards: int, horizon: float,
             placed: Sequence[Placement | None]) -> None:
    """Keep `placed`, a schedule placing every one of `jobs`, as the witness for them."""
    if len(placed) != len(jobs) or any(p is None for p in placed):
        return
    key = (tuple(jobs), n_cards, horizon)
    _kept[key] = tuple(placed)
    _kept.move_to_end(key)
    while len(_kept) > KEEP:
        _kept.popitem(last=False)


def recall(jobs: Sequence[Job], n_cards: int, horizon: float
           ) -> list[Placement | None] | None:
    """The witness kept for exactly these runs, cards and window, or None."""
    key = (tuple(jobs), n_cards, horizon)
    got = _kept.get(key)
    if got is None:
        return None
    _kept.move_to_end(key)
    return list(got)


def forget() -> None:
    """Let every kept schedule go."""
    _kept.clear()

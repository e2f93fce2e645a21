"""What fits: packing runs onto cards under one written-down objective.

The objective, compared lexicographically (the first difference decides):

1. the most complete seed sets counted from the first seed (seed 0's whole matrix, then
   seed 1's, …: a set only counts when every set before it is complete);
2. then the most further matrix (training) runs;
3. then the most robustness evaluations, each starting after its training run ended;
4. then the earliest end of the first complete seed set;
5. then the earliest last end.

Two solvers answer it: `fast` (plain Python, `planner.packing.fast`), used for live replans
and whenever no optimizer is installed, and `cp-sat` (OR-Tools, `planner.packing.cpsat`,
imported only when asked for), which proves the optimum of criteria 1-3 or reports its bound.

`planner.packing.sets.sets_fit` answers whether a given set of runs (the runs of K
complete seed sets, say) fits whole: True (proven, a schedule was found), False (proven
not), None (unknown by its deadline); it is what a search for the most seed sets calls.

Times are hours from the start of the usable window. A run fits when it ends no later than
`EPS_H` after the window closes: 1e-6 h (3.6 ms), far below anything a clock on a rented
machine resolves, and far above the rounding of sums of hour figures.
"""

from __future__ import annotations

import importlib.util
import time
from collections.abc import Sequence

from planner.packing.objective import (
    EPS_H,
    Job,
    Key,
    Packing,
    Placement,
    Solver,
    capacity_bound,
    counts,
    score,
    trivially_optimal,
)

__all__ = ["EPS_H", "Job", "Key", "Packing", "Placement", "Solver", "capacity_bound", "counts",
           "pack", "score"]


def have_cp_sat() -> bool:
    """Whether OR-Tools is installed, found without importing it."""
    return importlib.util.find_spec("ortools") is not None


def pack(jobs: Sequence[Job], n_cards: int, horizon: float, *, solver: Solver = "fast",
         time_limit_s: float = 5.0, exact_times: bool = False,
         deadline: float | None = None) -> Packing:
    """Place `jobs` on `n_cards` identical cards inside [0, horizon] under the objective.

    `fast` returns at once with a capacity bound; `cp-sat` (needs the `solve` extra) returns a
    proven optimum of criteria 1-3, or its best packing and a bound when `time_limit_s` of
    wall-clock time (from this call, model building included) runs out; `deadline`
    (`time.monotonic()` seconds) instead shares one deadline with other work; the solver's
    deterministic work is bounded by `time_limit_s` either way, so the answer does not
    depend on the machine's load unless the clock runs out first. When the fast
    packer already places every run that can run at all, criteria 1-3 are optimal without
    a solver, and cp-sat is skipped unless `exact_times` asks it to optimize criteria 4-5
    too (this keeps an export of a campaign that fits whole as quick as a plain plan). A
    schedule the capacity search proved for exactly these runs (`planner.packing.witness`)
    is taken as it is.
    Raises ModuleNotFoundError when cp-sat is asked for and OR-Tools is not installed.
    """
    from planner.packing.fast import pack_fast

    if deadline is None:
        deadline = time.monotonic() + time_limit_s
    placed = pack_fast(jobs, n_cards, horizon)
    proven = trivially_optimal(jobs, placed, n_cards, horizon)
    if not proven:
        from planner.packing.witness import recall

        # A schedule that proved these very runs fit whole (the capacity search's): the
        # plan of a proven capacity places every run.
        known = recall(jobs, n_cards, horizon)
        if known is not None:
            placed, proven = known, True
    bound = capacity_bound(jobs, n_cards, horizon)
    matrix = sum(1 for j, p in zip(jobs, placed, strict=True) if j.matrix and p is not None)
    if solver == "fast" or (proven and not exact_times):
        return Packing(placed, True if proven else None, matrix if proven else bound, "fast")
    from planner.packing.cpsat import pack_cp_sat
    from planner.packing.model import DET_PER_S, Clock

    # The deterministic work budget follows the limit asked for, not the time left when
    # the solver starts: the same command searches as far on an idle machine as on a busy
    # one (`planner.packing.model.DET_PER_S`).
    clock = Clock(deadline, time_limit_s * DET_PER_S)
    return pack_cp_sat(jobs, n_cards, horizon, placed, bound, clock, exact_times)

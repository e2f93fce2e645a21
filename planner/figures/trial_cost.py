"""What a trial of the command says of each run's start-up.

A plan charges every run `overheads.startup_minutes` before its steps (process start, data
loading, model build). A trial (`campaign-planner trial`) timed exactly that for the
preset's own command: the time from the process's start to its first timed step, less the
steps done before it at the median step time. Where the plan takes the trial's step times,
it takes its start-up too: the slowest configuration's, for every run.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner.figures.measured import TRIAL, smoke_test
from planner.spec.preset import Overheads

if TYPE_CHECKING:
    from planner.figures.measurements import Measurements


def trial_startup(m: Measurements, overheads: Overheads,
                  cpu_step_times: bool = False) -> tuple[Overheads, str]:
    """The overheads with the start-up the trial measured, and the decision that says so;
    unchanged (and no words) for other measurements, a CPU smoke test, or no start-up."""
    if m.workload.source != "trial" or smoke_test(m, cpu_step_times):
        return overheads, ""
    costs = [(c.trial.overhead_s, c.config) for c in m.configs
             if c.outcome == "measured" and c.step_time is not None and c.trial is not None
             and c.trial.overhead_s is not None]
    if not costs:
        return overheads, ""
    seconds, config = max(costs)
    minutes = round(seconds / 60.0, 3)
    note = (f"start-up {minutes:g} min per run, from the {TRIAL} on {m.device.name} (its "
            f"slowest, {config}: process start to the first timed step, less the steps "
            f"before it at the median step time) instead of the preset's "
            f"{overheads.startup_minutes:g} min")
    return overheads.model_copy(update={"startup_minutes": minutes}), note

"""A trial's results as `measurements.toml`: what `--measurements` plans from.

Each configuration gets its timed steps and peak memory, or, when its trial crashed, ran
out of memory or reported no progress, that outcome and why (no figure). What the trial
cost besides its steps (start-up, warm-up) is written with each, for the plan to charge
as each run's start-up (`planner.figures.trial_cost`).
"""

from __future__ import annotations

from datetime import UTC, datetime

from planner.figures.measured import trial_fingerprint, workload_settings
from planner.figures.measurements import (
    ConfigMeasurement,
    Device,
    Measurements,
    Memory,
    StepTime,
    TrialCost,
    Value,
    Workload,
)
from planner.run.trial import Budget, Result
from planner.spec.catalog import Dtype
from planner.spec.preset import Preset

GIB = float(2**30)


def _memory(r: Result) -> Memory | None:
    if not r.peak_bytes or r.memory_source is None:
        return None
    gib = r.peak_bytes / GIB
    return Memory(method=r.memory_source, peak_gib=gib,
                  allocated_gib=gib if r.memory_source == "reported" else None)


def _config(preset: Preset, r: Result, budget: Budget, keep_logs: bool) -> ConfigMeasurement:
    t = preset.training
    assert t is not None
    changes: dict[str, Value] = {}
    if r.run.variant != "baseline":
        changes = dict(next(v.changes for v in t.variants if v.name == r.run.variant))
    measured = r.outcome == "measured" and r.timing is not None
    timing = r.timing if measured else None
    flags = []
    if timing is not None and budget.steps is not None and timing.steps < budget.steps:
        flags.append(f"the command ended by itself after {timing.steps} timed steps, fewer "
                     f"than the {budget.steps} asked")
    cost = TrialCost(
        startup_s=r.timing.startup_s if r.timing else None,
        warmup_s=r.timing.warmup_s if r.timing else 0.0,
        warmup_steps=r.timing.warmup_steps if r.timing else 0,
        overhead_s=timing.overhead_s if timing else None,
        wall_s=round(r.wall_s, 3), exit_code=r.exit_code,
        log=str(r.log) if keep_logs or not measured else "")
    return ConfigMeasurement(
        config=r.run.variant, factors={**t.baseline.factors, **changes}, params=0,
        trainable_params=0, micro_batch=max(1, r.run.micro_batch),
        accumulation=max(1, r.run.accumulation),
        step_time=StepTime(median_s=timing.median_s, p10_s=timing.p10_s,
                           p90_s=timing.p90_s, steps=timing.steps) if timing else None,
        memory=_memory(r) if measured else None, flops_per_step=0.0, flags=flags,
        outcome=r.outcome,
        reason=r.reason, trial=cost)


def trial_measurements(preset: Preset, results: list[Result], device: Device, *,
                       dtype: Dtype, budget: Budget, command: str, keep_logs: bool = True,
                       date: datetime | None = None) -> Measurements:
    """The measurements of a trial of `preset`'s configurations on `device`; a measured
    configuration's log is named only where the logs are kept."""
    t = preset.training
    assert t is not None
    spec = {"command": t.command, "shell": t.shell, "warmup": budget.skip,
            **({"steps": budget.steps} if budget.steps is not None else {}),
            **({"minutes": budget.minutes} if budget.minutes is not None else {})}
    settings = workload_settings(preset)
    workload = Workload(source="trial", spec=spec, micro_batch=settings["micro_batch"],
                        accumulation=settings["accumulation"],
                        cards_per_run=settings["cards_per_run"],
                        fingerprint=trial_fingerprint(preset))
    stamp = (date or datetime.now(UTC)).replace(microsecond=0).isoformat()
    return Measurements(preset=preset.campaign.name, kind=preset.campaign.kind, date=stamp,
                        torch="", dtype=dtype, target_card=preset.campaign.card,
                        device=device, workload=workload, command=command,
                        configs=[_config(preset, r, budget, keep_logs) for r in results])

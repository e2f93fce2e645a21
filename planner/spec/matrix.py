"""Expanding a training workload into ordered runs, with memory-fit decisions.

Order is information-first: seed 0 of the baseline and of every variant, then seed 1 of
all, and so on; robustness controls come last, each after the run it evaluates.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple

from planner.spec.catalog import Card, Catalog
from planner.spec.costs import Figure
from planner.spec.preset import Costed, FactorValue, Overheads, Training


class Config(NamedTuple):
    """One configuration of the matrix (the baseline or a variant) as it will run."""

    name: str
    factors: dict[str, FactorValue]
    changes: dict[str, FactorValue]
    step_time: Figure
    peak_memory: Figure
    micro_batch: int
    accumulation: int
    peak_gib: float
    fits: bool
    reason: str = ""
    decision: str = ""
    warnings: tuple[str, ...] = ()


class RunSpec(NamedTuple):
    """One run before placement."""

    id: str
    kind: Literal["train", "robustness"]
    config: Config
    seed: int
    duration_h: float
    cards: int
    depends_on: int = -1
    robustness: str = ""
    steps: int = 0


def fmt_value(v: FactorValue) -> str:
    """A factor value as it reads in ids and messages."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def memory_budget(card: Card, overheads: Overheads) -> float:
    """GiB a run may peak at on `card`: what a process can allocate there (usable memory less
    the CUDA context, see the catalog) less the preset's margin."""
    return card.allocatable_gib - overheads.memory_margin_gib


def fit_memory(
    name: str,
    costed: Costed,
    training: Training,
    card_key: str,
    card: Card,
    catalog: Catalog,
    overheads: Overheads,
) -> tuple[int, int, float, bool, str, str]:
    """Decide micro-batch and accumulation for one configuration on `card`.

    Returns (micro_batch, accumulation, peak_gib, fits, reason, decision). When the peak
    exceeds the budget and the preset says how memory scales with the micro-batch, the
    largest smaller micro-batch that divides the per-card batch is taken and accumulation
    raised so the effective batch stays the rule's.
    """
    mb, acc = training.micro_batch, training.accumulation
    peak = costed.peak_memory_gib.value
    budget = memory_budget(card, overheads)
    if peak <= budget:
        return mb, acc, peak, True, "", ""
    per_card = mb * acc
    where = (f"peak {peak:.1f} GiB at micro-batch {mb} exceeds {budget:.1f} GiB usable on "
             f"{card_key} ({card.usable_memory_gib or card.memory_gib:g} GiB a process can "
             f"allocate less {card.context_gib:g} GiB CUDA context and "
             f"{overheads.memory_margin_gib:g} GiB margin)")
    per_sample = costed.memory_per_sample_gib
    if per_sample is not None:
        for m in range(mb - 1, 0, -1):
            if per_card % m:
                continue
            est = peak - (mb - m) * per_sample
            if est <= budget:
                a = per_card // m
                decision = (
                    f"{name}: {where}; micro-batch {m} × accumulation {a} keeps the effective "
                    f"batch {training.rule_batch} (estimated peak {est:.1f} GiB at "
                    f"{per_sample:g} GiB per sample; step time assumed unchanged: measure it)"
                )
                return m, a, est, True, "", decision
    bigger = sorted(
        (c.memory_gib, k) for k, c in catalog.cards.items()
        if memory_budget(c, overheads) >= (peak if per_sample is None else
                                           peak - (mb - 1) * per_sample)
    )
    names = ", ".join(k for _, k in bigger) or "none in the catalog"
    how = ("no micro-batch that divides the per-card batch brings it under"
           if per_sample is not None else
           "give memory_per_sample_gib to let the planner shrink the micro-batch")
    reason = f"{where}; {how}; cards with the memory: {names}"
    return mb, acc, peak, False, reason, ""


def configs(training: Training, card_key: str, card: Card, catalog: Catalog,
            overheads: Overheads) -> list[Config]:
    """The baseline and every variant, with their memory decisions on `card`."""
    out: list[Config] = []
    base = training.baseline
    entries: list[tuple[str, Costed, dict[str, FactorValue]]] = [("baseline", base, {})]
    entries += [(v.name, v, dict(v.changes)) for v in training.variants]
    for name, costed, changes in entries:
        mb, acc, peak, fits, reason, decision = fit_memory(
            name, costed, training, card_key, card, catalog, overheads)
        out.append(Config(
            name=name,
            factors={**base.factors, **changes},
            changes=changes,
            step_time=costed.step_time_s,
            peak_memory=costed.peak_memory_gib,
            micro_batch=mb,
            accumulation=acc,
            peak_gib=peak,
            fits=fits,
            reason=reason,
            decision=decision,
        ))
    return out


def _count(steps: int, every: int) -> int:
    # An evaluation and a checkpoint always close a run, whatever the interval.
    return 1 if every <= 0 else math.ceil(steps / every)


def run_hours(steps: int, step_s: float, overheads: Overheads) -> float:
    """A run's duration: startup + steps × step time + evaluations + checkpoint writes."""
    o = overheads
    seconds = (
        o.startup_minutes * 60
        + steps * step_s
        + _count(steps, o.eval_every_steps) * o.eval_minutes * 60
        + _count(steps, o.checkpoint_every_steps) * o.checkpoint_write_minutes * 60
    )
    return seconds / 3600.0


def expand(training: Training, cfgs: list[Config], campaign_id: str,
           overheads: Overheads) -> list[RunSpec]:
    """All runs in information-first order: seed by seed, baseline first; robustness last."""
    specs: list[RunSpec] = []
    train_index: dict[tuple[str, int], int] = {}
    hours = {cfg.name: run_hours(training.steps, cfg.step_time.value, overheads) for cfg in cfgs}
    for seed in training.seeds:
        for cfg in cfgs:
            train_index[(cfg.name, seed)] = len(specs)
            specs.append(RunSpec(
                id=f"{campaign_id}-{cfg.name}-s{seed}",
                kind="train",
                config=cfg,
                seed=seed,
                duration_h=hours[cfg.name],
                cards=training.cards_per_run,
                steps=training.steps,
            ))
    for seed in training.seeds:
        for cfg in cfgs:
            for rob in training.robustness:
                if rob.applies_to and cfg.name not in rob.applies_to:
                    continue
                specs.append(RunSpec(
                    id=f"{campaign_id}-{cfg.name}-s{seed}-{rob.name}",
                    kind="robustness",
                    config=cfg,
                    seed=seed,
                    duration_h=(overheads.startup_minutes + rob.eval_minutes) / 60.0,
                    cards=training.cards_per_run,
                    depends_on=train_index[(cfg.name, seed)],
                    robustness=rob.name,
                ))
    return specs

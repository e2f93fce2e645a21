"""`plan_campaign`: the one pure function every front end calls."""

from __future__ import annotations

import hashlib
import json
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from planner.campaign.runs import adaptation_values, check_ids, training_runs
from planner.errors import InputError
from planner.figures import measured
from planner.figures.analytic_tier import disagreements
from planner.figures.estimates import DEFAULT_ESTIMATE, entered_configs, figures_on
from planner.packing.capacity_search import training_capacity
from planner.packing.pack import Solver, pack
from planner.packing.why import jobs_of
from planner.planfile.plan import (
    AdaptationPlan,
    Assumptions,
    ConfigFigures,
    NotFitting,
    Plan,
    PlanCampaign,
    Run,
)
from planner.planning import discipline
from planner.planning.summary import summarize
from planner.spec.catalog import Card, Catalog
from planner.spec.costs import Estimate, MeasuredFrom
from planner.spec.matrix import Config, configs, expand, memory_budget
from planner.spec.preset import Preset
from planner.spec.sweeps import sweep_notes

if TYPE_CHECKING:
    from planner.corpus.layout import Layout
    from planner.figures.measurements import Measurements



def provenance(m: Measurements) -> MeasuredFrom:
    """Where measured figures came from; the measurements module loads only for a plan that
    has them, not for a plain one."""
    from planner.figures.measurements import provenance as of

    return of(m)


PACK_SHARE = 0.6
"""The share of `--time-limit` the packing may take; the capacity proof has the rest."""


def fingerprint(preset: Preset) -> str:
    """SHA-256 of the preset's canonical JSON form."""
    data = preset.model_dump(mode="json")
    # `shell` at its default changes nothing a command does that its words do not show:
    # left out, a preset keeps the id it had before commands could ask for a shell.
    for section in ("ablation", "adaptation", "embedding"):
        part = data.get(section)
        if isinstance(part, dict):
            for cmd in (part, *part.get("robustness", [])):
                if cmd.get("shell") is False:
                    del cmd["shell"]
            # How runs are named for trackers is no part of what the campaign computes.
            part.pop("tracking", None)
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canon.encode()).hexdigest()


def campaign_id(preset: Preset, fp: str | None = None) -> str:
    """The campaign's stable id: the preset's own, or its name and a short fingerprint."""
    if preset.campaign.id:
        return preset.campaign.id
    return f"{preset.campaign.name}-{(fp or fingerprint(preset))[:6]}"


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in v.split("."))


def check(preset: Preset, catalog: Catalog, source: str | None = None) -> tuple[Card, list[str]]:
    """Checks that need the catalog or span sections; returns the card and the warnings.

    Raises InputError naming the field for anything that must stop the plan.
    """
    c = preset.campaign
    card = catalog.get(c.card, file=source, field="campaign.card")
    warnings: list[str] = []
    order = preset.order
    cuda = None
    if _version(order.cuda) < _version(card.min_cuda):
        # The stack preflight, and the measuring package it is part of, load only for an
        # order whose CUDA is older than the card's first: it decides what that means.
        from planner.measure.stack import cuda_finding

        cuda = cuda_finding(card, order.cuda)
    if cuda is not None and cuda[0] == "warn":
        warnings.append(f"order.cuda: {cuda[1]}")
    elif cuda is not None:
        raise InputError(
            f"CUDA {order.cuda} cannot target {card.name} ({card.sm}); it needs CUDA "
            f">= {card.min_cuda}", file=source, field="order.cuda")
    if _version(order.pytorch)[:2] < _version(card.min_pytorch):
        raise InputError(
            f"PyTorch {order.pytorch} has no kernels for {card.name} ({card.sm}); it needs "
            f"PyTorch >= {card.min_pytorch}", file=source, field="order.pytorch")
    training = preset.training
    if training is not None:
        section = c.kind
        for finding in discipline.check(training, section):
            if not finding.waived:
                raise InputError(finding.message + " (set waive_one_factor = \"reason\" on "
                                 "the variant to accept it with a warning)",
                                 file=source, field=finding.field)
            idx = finding.field.split("[")[1].split("]")[0]
            reason = training.variants[int(idx)].waive_one_factor
            warnings.append(f"{finding.message}; waived: {reason}")
        if training.cards_per_run > c.cards:
            raise InputError(
                f"{training.cards_per_run} cards per run, but only {c.cards} rented",
                file=source, field=f"{section}.cards_per_run")
        if c.cards % training.cards_per_run:
            idle = c.cards % training.cards_per_run
            warnings.append(
                f"{c.cards} cards in runs of {training.cards_per_run}: {idle} card"
                f"{'s' if idle > 1 else ''} can only take a run when others are free too")
    return card, warnings


def plan_campaign(preset: Preset, catalog: Catalog, *, measurements: Measurements | None = None,
                  created: datetime | None = None, source: str | None = None,
                  corpus: Layout | None = None,
                  estimate: Estimate = DEFAULT_ESTIMATE, solver: Solver = "fast",
                  time_limit_s: float = 5.0, cpu_step_times: bool = False,
                  extra_variants: bool = True) -> Plan:
    """Plan a campaign: validate it against the catalog, order its runs information-first,
    place them on the cards inside the usable window, and sum up what fits.

    `measurements` replace the preset's figures per configuration (see `planner.figures.measured`).
    `source` names the preset file in error messages. `corpus`: a scanned corpus laid out in
    shards (`planner.corpus.layout.build`), for exact embedding counts. Figures taken on
    another card are derived from their anchor (`planner.figures.estimates.figures_on`); `estimate`
    picks the end of their range planned on (`cautious`: the slow end). `solver`: the fast
    packer, or `cp-sat` (the `solve` extra) for a proven optimum within `time_limit_s`
    (see `planner.packing.pack` for the objective). `cpu_step_times`: plan with step
    times measured on a CPU (else such measurements give only memory). `extra_variants`:
    whether the capacity counts the variants that would fit beside the asked seeds
    (`advise` ranks hundreds of orders without them). Raises InputError on bad input.
    """
    card, warnings = check(preset, catalog, source)
    budget_note = ""
    if preset.embedding is not None:
        from planner.corpus.budget import with_budget

        preset, budget_note = with_budget(preset, card, measurements)
    if measurements is not None:
        warnings += measured.check_matches(preset, measurements, source)
    c, o = preset.campaign, preset.overheads
    fp = fingerprint(preset)
    cid = campaign_id(preset, fp)
    offset = o.stack_check_hours
    until = c.hours - o.safety_margin_hours
    usable = until - offset
    if usable <= 0:
        raise InputError(
            f"stack check ({o.stack_check_hours:g} h) and safety margin "
            f"({o.safety_margin_hours:g} h) leave no usable time in a {c.hours:g} h window",
            file=source, field="overheads")
    stamp = (created or datetime.now(UTC)).replace(microsecond=0).isoformat()
    # A price the preset gives is for the card it names; any other card takes the catalog's.
    own_price = c.price_per_card_hour is not None and c.price_card in ("", c.card)
    price = c.price_per_card_hour if own_price else card.price_per_card_hour
    campaign = PlanCampaign(
        id=cid, name=c.name, kind=c.kind, created=stamp, card=c.card, card_name=card.name,
        cards=c.cards, window_hours=c.hours, usable_hours=round(usable, 4),
        usable_from_h=offset, usable_until_h=until, fingerprint=fp,
        price_per_card_hour=price, currency=c.currency,
        tracking=preset.training.tracking if preset.training is not None else True,
    )
    on = figures_on(preset, catalog, estimate, source)
    if preset.embedding is not None:
        from planner.planning.embedding import plan_embedding

        if measurements is None:
            plan = plan_embedding(on, card, campaign, warnings, source, corpus,
                                  budget_note=budget_note)
            return plan.model_copy(update={"assumptions": plan.assumptions.model_copy(
                update={"estimate": estimate})})
        on, more = measured.apply_embedding(on, measurements, c.card, card, catalog, estimate,
                                            cpu_step_times)
        plan = plan_embedding(on, card, campaign, warnings + more, source, corpus,
                              budget_note=budget_note)
        return plan.model_copy(update={"assumptions": plan.assumptions.model_copy(
            update={"measurements": provenance(measurements), "estimate": estimate,
                    "measured_configs": measured.measured_configs(measurements)[:1],
                    "configs_total": 1})})
    training = on.training
    assert training is not None
    startup = ""
    if measurements is not None and measurements.workload.source == "trial":
        from planner.figures.trial_cost import trial_startup  # only for a trial's figures

        o, startup = trial_startup(measurements, o, cpu_step_times)
    cfgs = configs(training, c.card, card, catalog, o)
    derived = {cfg.name: cfg.step_time for cfg in cfgs}
    before = {cfg.name: (cfg.step_time, cfg.peak_memory) for cfg in cfgs}
    notes: list[str] = []
    if measurements is not None:
        cfgs, notes, more = measured.apply_training(on, training, cfgs, measurements, c.card,
                                                    card, catalog, estimate, cpu_step_times)
        warnings += more
    elif training.cards_per_run > 1:
        from planner.figures.multicard import entered_note  # only for runs on several cards

        notes.append(entered_note(training.cards_per_run))
    warnings += disagreements(preset, derived, {cfg.name: cfg.step_time for cfg in cfgs},
                              catalog)
    specs = expand(training, cfgs, cid, o)
    check_ids(preset, training, specs, source)
    # Configurations that do not fit memory never reach the packer (their jobs last
    # forever), and neither do evaluations of them.
    jobs = jobs_of(specs, training.seeds)
    began = time.monotonic()
    # The capacity proof shares the solver's time limit with the packing: a packing the
    # solver cannot prove would otherwise take all of it, and leave the room unproven.
    packing = pack(jobs, c.cards, usable, solver=solver, time_limit_s=time_limit_s * PACK_SHARE)
    capacity = training_capacity(jobs, packing, len(training.seeds), c.cards, usable,
                                 solver=solver,
                                 time_limit_s=time_limit_s - (time.monotonic() - began),
                                 work_s=time_limit_s * (1 - PACK_SHARE),
                                 extras=extra_variants)
    runs, missing, spare = training_runs(preset, training, cid, specs, jobs, packing, usable,
                                          offset, source)
    decisions = [*sweep_notes(training.baseline, training.sweeps), *notes,
                 *([startup] if startup else []),
                 *(cfg.decision for cfg in cfgs if cfg.decision)]
    warnings += _training_warnings(cfgs, runs, missing, entered_configs(preset, cfgs, before))
    summary = summarize(preset, training, cfgs, specs, runs, usable, price, packing)
    summary = summary.model_copy(update={"capacity": capacity})
    figures = [
        ConfigFigures(config=cfg.name, step_time_s=cfg.step_time, peak_memory_gib=cfg.peak_memory,
                      planned_peak_gib=round(cfg.peak_gib, 3), micro_batch=cfg.micro_batch,
                      accumulation=cfg.accumulation, fits=cfg.fits)
        for cfg in cfgs
    ]
    done = {n for n in measured.measured_configs(measurements)} if measurements else set()
    assumptions = Assumptions(overheads=o, card_memory_gib=card.memory_gib,
                              memory_budget_gib=memory_budget(card, o), figures=figures,
                              measurements=provenance(measurements) if measurements else None,
                              estimate=estimate, configs_total=len(cfgs),
                              measured_configs=[cfg.name for cfg in cfgs if cfg.name in done])
    adaptation = (AdaptationPlan(**adaptation_values(preset)) if preset.adaptation else None)
    return Plan(campaign=campaign, assumptions=assumptions, runs=runs, not_fitting=missing,
                decisions=decisions, warnings=warnings, summary=summary, adaptation=adaptation,
                held=spare)


def _training_warnings(cfgs: list[Config], runs: list[Run], missing: list[NotFitting],
                       entered: list[str]) -> list[str]:
    out: list[str] = []
    if entered:
        out.append(
            f"{len(entered)} of {len(cfgs)} configurations rest on `entered` figures "
            f"({', '.join(entered[:4])}{', …' if len(entered) > 4 else ''}): replace them with "
            "measured ones before ordering")
    if not cfgs[0].fits:
        out.append("the baseline does not fit the card: no variant can be compared to it")
    for cfg in cfgs:
        if cfg.decision:
            out.append(f"{cfg.name} runs at a reduced micro-batch (see decisions)")
    if not runs:
        out.append("no run fits the window")
    elif missing:
        out.append(f"{len(missing)} of {len(runs) + len(missing)} runs "
                   f"{'does' if len(missing) == 1 else 'do'} not fit (see not fitting)")
    return out

"""A campaign's training runs as the plan holds them: each packed spec with its command
filled from the preset's template, its checkpoint, resume and export paths, and its cards and
hours."""

from __future__ import annotations

from planner.errors import InputError
from planner.packing.pack import Job, Packing
from planner.packing.schedule import Placement
from planner.packing.why import Reasons
from planner.planfile.plan import NotFitting, Run
from planner.planning.spare import spare_specs
from planner.spec.matrix import Config, RunSpec, fmt_value
from planner.spec.paths import run_id_problem
from planner.spec.preset import FactorValue, Preset, Training
from planner.spec.templates import Args, TemplateError, fill


def _command(template: str, shell: bool, source: str | None, field: str,
             **values: object) -> tuple[list[str], str]:
    try:
        return fill(template, values, shell)
    except TemplateError as exc:
        raise InputError(str(exc), file=source, field=field) from None


def training_runs(preset: Preset, training: Training, cid: str, specs: list[RunSpec],
                  jobs: list[Job], packing: Packing, usable: float, offset: float,
                  source: str | None) -> tuple[list[Run], list[NotFitting], list[Run]]:
    """The plan's runs of the packed specs (with their commands filled), the runs left out
    and why, and the left-out runs kept whole for a replan to add."""
    section = preset.campaign.kind
    runs: list[Run] = []
    missing: list[NotFitting] = []
    spare: list[Run] = []
    placed = packing.placements
    kept_whole = spare_specs(specs, placed, training.seeds)
    rob_by_name = {r.name: r for r in training.robustness}
    adaptation = adaptation_values(preset)
    reasons: Reasons | None = None
    # What depends only on the configuration is worked out once, not once per seed.
    per_config: dict[str, tuple[str, FactorValue, dict[str, str], Args]] = {}
    for i, (spec, place) in enumerate(zip(specs, placed, strict=True)):
        cfg = spec.config
        if place is None:
            if reasons is None:
                reasons = Reasons([s.id for s in specs], jobs, packing, preset.campaign.cards,
                                  usable)
            reason = cfg.reason if not cfg.fits else reasons.why(i)
            missing.append(NotFitting(id=spec.id, reason=reason))
            if i not in kept_whole:
                continue
            # Left out but kept whole, so that a replan can add it once runs go faster.
            place = Placement(0.0, spec.duration_h, tuple(range(spec.cards)))
        if cfg.name not in per_config:
            per_config[cfg.name] = _config_values(cfg)
        factor, value, factors, overrides = per_config[cfg.name]
        train_id = specs[spec.depends_on].id if spec.depends_on >= 0 else spec.id
        ckpt = f"{training.checkpoint_root}/{train_id}"
        export = f"{training.export_root}/{spec.id}"
        resume = f"{ckpt}/latest"
        eff = cfg.micro_batch * cfg.accumulation * spec.cards
        source_of = rob_by_name[spec.robustness] if spec.robustness else training
        field = (f"{section}.robustness.command" if spec.robustness else f"{section}.command")
        argv, command = _command(
            source_of.command, source_of.shell, source, field,
            run_id=spec.id, campaign_id=cid, variant=cfg.name, seed=spec.seed,
            factor=factor, value=fmt_value(value), factors=factors, overrides=overrides,
            checkpoint_dir=ckpt, resume=resume, export_name=export, steps=spec.steps,
            micro_batch=cfg.micro_batch, accumulation=cfg.accumulation, effective_batch=eff,
            **adaptation,
        )
        # Built from values of the right types, checked once where they came from: one
        # run per matrix cell, so validating each again is most of a replan's time.
        (runs if i not in kept_whole else spare).append(Run.model_construct(
            id=spec.id, kind=spec.kind, variant=cfg.name, factor=factor, value=value,
            seed=spec.seed, card=list(place.cards),
            start_h=round(place.start + offset, 4), end_h=round(place.end + offset, 4),
            steps=spec.steps, micro_batch=cfg.micro_batch, accumulation=cfg.accumulation,
            effective_batch=eff, checkpoint_dir=ckpt, export_name=export, command=command,
            argv=argv, shell=source_of.shell, resume=resume,
            depends_on=specs[spec.depends_on].id if spec.depends_on >= 0 else "",
            max_retries=training.max_retries,
        ))
    # Plan order is start order, earlier seeds first on ties: the executor and the SLURM
    # export launch runs in plan order, so they follow the packing rather than redo it.
    order = {spec.id: n for n, spec in enumerate(specs)}
    runs.sort(key=lambda r: (r.start_h, order[r.id]))
    return runs, missing, spare


def check_ids(preset: Preset, training: Training, specs: list[RunSpec],
              source: str | None) -> None:
    """Refuse, before anything is planned, a run id too long to name its files."""
    section = preset.campaign.kind
    sweeps = {sw.factor: i for i, sw in enumerate(training.sweeps)}
    # A variant a sweep made is named by the sweep's names, not by a table of the file.
    variants = {v.name: (f"{section}.sweeps[{sweeps[v.sweep]}].names" if v.sweep in sweeps
                         else f"{section}.variants[{i}].name")
                for i, v in enumerate(training.variants)}
    controls = {r.name: i for i, r in enumerate(training.robustness)}
    for spec in specs:
        problem = run_id_problem(spec.id)
        if problem is None:
            continue
        # Name the longest of the names the id is made of.
        parts = [(len(preset.campaign.id or preset.campaign.name),
                  "campaign.id" if preset.campaign.id else "campaign.name")]
        if spec.config.name in variants:
            parts.append((len(spec.config.name), variants[spec.config.name]))
        if spec.robustness in controls:
            parts.append((len(spec.robustness),
                          f"{section}.robustness[{controls[spec.robustness]}].name"))
        raise InputError(problem + "; shorten the names it is made of", file=source,
                         field=max(parts)[1])


def _config_values(cfg: Config) -> tuple[str, FactorValue, dict[str, str], Args]:
    """(factor, value, factors as text, overrides) of one configuration."""
    if len(cfg.changes) == 1:
        ((factor, value),) = cfg.changes.items()
    else:
        factor = "+".join(cfg.changes)
        value = "+".join(fmt_value(v) for v in cfg.changes.values())
    factors = {k: fmt_value(v) for k, v in cfg.factors.items()}
    return factor, value, factors, Args(f"{k}={v}" for k, v in factors.items())


def adaptation_values(preset: Preset) -> dict[str, str]:
    """The adaptation's template values (empty outside an adaptation campaign)."""
    a = preset.adaptation
    if a is None:
        return {"base_model": "", "trained_parameters": "", "dataset": ""}
    return {"base_model": a.base_model, "trained_parameters": a.trained_parameters,
            "dataset": a.dataset}

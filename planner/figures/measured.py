"""Planning from `measurements.toml`: measured figures replace entered ones, each labelled.

Per configuration and target card:
- measured on the same card model → `measured on <device>`;
- measured on another catalog card → `scaled from <device>` (step time by the roofline rule of
  `planner.figures.scaling`; memory carried over unchanged: same dtype, same batch);
- measured on a CPU → a smoke test: the memory (the fake-tensor estimate, labelled as one)
  is used, the step times the plan had are kept ("measured on CPU: memory used, step times
  kept"): a CPU timing says nothing about a GPU. `--use-cpu-step-times` plans with the CPU
  timings themselves (to exercise a plan end to end on a laptop);
- measured on a GPU the catalog does not know → the step time is `analytic` (the counted
  FLOPs at the fitted efficiency of `planner.figures.analytic_time`).
The micro-batch comes from the measurement's search when it sized for this very card, else
from the measured peak and its per-sample growth; a reduction keeps the effective batch and
is written into the plan's decisions.
"""

from __future__ import annotations

import hashlib
import json
from typing import TYPE_CHECKING, Any

from planner.errors import InputError
from planner.figures.scaling import analytic_step_time, planned_on, scale_step_time
from planner.spec.catalog import Card, Catalog
from planner.spec.costs import Estimate, Figure
from planner.spec.hf_file import config_changed
from planner.spec.matrix import Config, memory_budget
from planner.spec.measure import MeasureSpec
from planner.spec.preset import Preset, Training

if TYPE_CHECKING:
    from planner.figures.measurements import ConfigMeasurement, Measurements


def spec_of(preset: Preset) -> MeasureSpec | None:
    """The preset's measurement section, if any."""
    workload = preset.training or preset.embedding
    return getattr(workload, "measure", None)


def require_spec(preset: Preset, source: str | None = None) -> MeasureSpec:
    """The measurement section `measure` needs, or an InputError saying what to add."""
    kind = preset.campaign.kind
    spec = spec_of(preset)
    if spec is None:
        raise InputError(f"no measurement section: add [{kind}.measure] with reference = "
                         "\"transformer\" (or \"encoder\") and its sizes, or factory = "
                         "\"package.module:function\"", file=source, field=f"{kind}.measure")
    if spec.dtype == "fp8":
        raise InputError("fp8 steps are not measured here (they need a model written for "
                         "fp8 kernels): measure bf16", file=source, field=f"{kind}.measure.dtype")
    return spec


def workload_settings(preset: Preset) -> dict[str, Any]:
    """What a measurement depends on, besides each configuration's factors."""
    spec = spec_of(preset)
    out: dict[str, Any] = {"kind": preset.campaign.kind,
                           "spec": spec.model_dump(mode="json") if spec else None}
    t, e = preset.training, preset.embedding
    if t is not None:
        out.update(micro_batch=t.micro_batch, accumulation=t.accumulation,
                   cards_per_run=t.cards_per_run)
    if e is not None:
        out.update(truncation=e.truncation_tokens, longest=e.lengths.max, batching=e.batching,
                   batch_size=e.batch_size, token_budget=e.token_budget)
    # Timing repetitions do not change what is measured.
    if out["spec"]:
        for k in ("warmup_steps", "steps"):
            out["spec"].pop(k, None)
    return out


def workload_fingerprint(preset: Preset) -> str:
    """SHA-256 of `workload_settings`."""
    text = json.dumps(workload_settings(preset), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def trial_fingerprint(preset: Preset) -> str:
    """SHA-256 of `workload_settings` and the command a trial ran: a trial measured that
    command, and a changed one is another workload."""
    t = preset.training
    settings = {**workload_settings(preset),
                "command": t.command if t else "", "shell": t.shell if t else False}
    text = json.dumps(settings, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def check_matches(preset: Preset, m: Measurements, source: str | None = None) -> list[str]:
    """Refuse measurements of another workload; warnings for lesser mismatches. `source`:
    the preset's file, beside which a transformers config file is looked for."""
    if m.kind != preset.campaign.kind:
        raise InputError(f"measured a {m.kind} campaign, the preset is {preset.campaign.kind}",
                         file=m.file, field="kind")
    if m.workload.source == "trial":
        if m.workload.fingerprint != trial_fingerprint(preset):
            raise InputError("trialled with another command or other workload settings "
                             "(micro-batch, accumulation, cards per run) than the preset's: "
                             "run the trial again", file=m.file, field="workload.fingerprint")
    elif m.workload.fingerprint != workload_fingerprint(preset):
        raise InputError("measured with other workload settings (measurement section, "
                         "micro-batch, accumulation) than the preset's: measure again",
                         file=m.file, field="workload.fingerprint")
    spec = spec_of(preset)
    warnings = (config_changed(spec.config, m.workload.spec.get("config_sha256"), source,
                               f"{preset.campaign.kind}.measure.config", m.file)
                if spec is not None and spec.reference == "hf" else [])
    if preset.training is not None:
        t = preset.training
        wanted = {"baseline": t.baseline.factors,
                  **{v.name: {**t.baseline.factors, **v.changes} for v in t.variants}}
        for i, cm in enumerate(m.configs):
            if cm.config not in wanted:
                warnings.append(f"measurements of {cm.config!r} ignored: the preset has no such "
                                "configuration")
            elif cm.factors != wanted[cm.config]:
                raise InputError(f"{cm.config} was measured with factors {cm.factors}, the "
                                 f"preset has {wanted[cm.config]}: measure again",
                                 file=m.file, field=f"configs[{i}].factors")
    if m.partial:
        what = f"{m.file} is" if m.file else "the measurements are"
        warnings.append(f"{what} partial (stopped early): configurations not measured keep "
                        "their previous figures")
    return warnings


def _device_card(m: Measurements, catalog: Catalog) -> str:
    return m.device.card if m.device.card in catalog.cards else ""


TRIAL = "trial of the command"
"""How a figure taken by `campaign-planner trial` names its origin, after the device."""


OUTCOME_WORDS = {"crashed": "crashed", "out-of-memory": "ran out of memory",
                 "no-progress": "reported no progress", "measured": "measured"}
"""A trialled configuration's outcome in words."""


def device_label(m: Measurements) -> str:
    """The device a figure names: a trial's says it timed the preset's own command."""
    return f"{m.device.name} ({TRIAL})" if m.workload.source == "trial" else m.device.name


_TRIAL_MEMORY = {
    "reported": "peak_memory_bytes the command reported (its allocator's peak allocation: "
                "the allocator's cache comes on top)",
    "nvml": "the most memory in use on the run's cards, sampled with NVML during the trial, "
            "less what was in use before it (the CUDA context and the allocator's cache "
            "included)",
}


def memory_figure(cm: ConfigMeasurement, m: Measurements, card_key: str,
                  catalog: Catalog) -> Figure | None:
    """The peak memory figure of a configuration, labelled for `card_key` (None: none was
    measured)."""
    mem = cm.memory
    if mem is None:
        return None
    if mem.method == "fake-tensor":
        parts = ", ".join(f"{k} {getattr(mem, k + '_gib'):.2f}" for k in
                          ("weights", "gradients", "optimizer", "activations")
                          if getattr(mem, k + "_gib") is not None)
        return Figure(value=mem.peak_gib, source="measured", card=card_key,
                      device=f"{m.device.name} (fake-tensor estimate)",
                      note=f"estimate at micro-batch {cm.micro_batch}, torch MemTracker under "
                           f"FakeTensorMode: {parts} GiB; allocator overhead not included")
    same = _device_card(m, catalog) == card_key
    note = (f"max_memory_reserved at micro-batch {cm.micro_batch} (allocated "
            f"{mem.allocated_gib or 0:.2f} GiB, {mem.num_alloc_retries or 0} allocator retries)")
    if mem.method in _TRIAL_MEMORY:
        note = f"{_TRIAL_MEMORY[mem.method]} at micro-batch {cm.micro_batch}"
    if not same:
        note += "; carried over unchanged (same dtype and batch): allocator and library " \
                "workspaces differ between cards"
    return Figure(value=mem.peak_gib, source="measured" if same else "scaled", card=card_key,
                  device=device_label(m), note=note)


CPU_KEPT = "measured on CPU: memory used, step times kept"
"""What a plan says of measurements taken on a CPU (without `--use-cpu-step-times`)."""


def smoke_test(m: Measurements, cpu_step_times: bool = False) -> bool:
    """Whether the measurements are a CPU smoke test whose step times the plan ignores."""
    return m.device.kind == "cpu" and not cpu_step_times


def step_figure(cm: ConfigMeasurement, m: Measurements, card_key: str, card: Card,
                catalog: Catalog, estimate: Estimate = "cautious",
                cpu_step_times: bool = False) -> Figure | None:
    """The step time figure of a configuration on `card_key` (None: nothing usable, or a
    CPU timing not asked for), derived from the measurement (its anchor) whatever card was
    planned before."""
    if cm.step_time is None or smoke_test(m, cpu_step_times):
        return None
    st = cm.step_time
    if m.device.kind == "cpu":
        return Figure(value=st.median_s, source="measured", card=card_key,
                      device=device_label(m),
                      note=f"timed on {m.device.name}, planned as asked "
                           f"(--use-cpu-step-times): median of {st.steps} steps at "
                           f"micro-batch {cm.micro_batch} × "
                           f"{cm.accumulation}; it says nothing of {card.name}'s speed")
    src_key = _device_card(m, catalog)
    if src_key == card_key:
        mfu = f"; MFU {cm.mfu:.0%}" if cm.mfu is not None else ""
        return Figure(value=st.median_s, source="measured", card=card_key,
                      device=device_label(m),
                      note=f"median of {st.steps} steps (p10 {st.p10_s:.4g} s, p90 "
                           f"{st.p90_s:.4g} s) at micro-batch {cm.micro_batch} × "
                           f"{cm.accumulation}{mfu}")
    if src_key:
        span = scale_step_time(st.median_s, cm.flops_per_step, src_key, card_key, catalog,
                               m.dtype)
        return Figure(value=span.pick(estimate), source="scaled", card=card_key,
                      device=device_label(m), low=span.fast, high=span.slow,
                      note=f"measured {st.median_s:.4g} s on {src_key}; {span.note}; "
                           f"{planned_on(estimate)}")
    if not cm.flops_per_step:
        return None
    span = analytic_step_time(cm.flops_per_step, card_key, catalog, m.dtype)
    return Figure(value=span.pick(estimate), source="analytic", card=card_key, low=span.fast,
                  high=span.slow,
                  note=f"{span.note}; a {m.device.kind} timing ({st.median_s:.4g} s on "
                       f"{m.device.name}) does not transfer to {card.name}; "
                       f"{planned_on(estimate)}")


def merge_measurements(old: Measurements | None, new: Measurements) -> Measurements:
    """`new`, with the configurations it did not time taken from `old` when both measured
    the same workload on the same device: a cancelled measurement replaces only what it
    measured, the rest keeps its previous figures."""
    if (old is None or not new.partial or old.workload.fingerprint != new.workload.fingerprint
            or old.device != new.device or old.dtype != new.dtype):
        return new
    timed = set(measured_configs(new))
    kept = [c for c in old.configs if c.step_time is not None and c.config not in timed]
    mine = [c for c in new.configs if c.config in timed]
    return new.model_copy(update={"configs": mine + kept})


def measured_configs(m: Measurements) -> list[str]:
    """Configurations the measurements time (a cancelled run leaves some out or untimed)."""
    return [c.config for c in m.configs if c.step_time is not None]


def choose_batch(cm: ConfigMeasurement, training: Training, card_key: str,
                 budget: float) -> tuple[int, int, float, bool, str, str]:
    """(micro_batch, accumulation, peak, fits, reason, how) for one configuration."""
    per_card = training.micro_batch * training.accumulation
    assert cm.memory is not None  # a configuration without memory keeps the plan's batch
    at, peak_at = cm.micro_batch, cm.memory.peak_gib
    slope = cm.memory.per_sample_gib
    b = cm.batch
    if b is not None and b.card == card_key:
        how = (f"largest micro-batch that fits is {b.largest}"
               f"{'+' if b.largest >= b.limit else ''} by a {b.method} batch search")
        if b.micro_batch and b.accumulation:
            peak = peak_at + (b.micro_batch - at) * (slope or 0.0)
            if peak <= budget:
                return b.micro_batch, b.accumulation, peak, True, "", how
            return (b.micro_batch, b.accumulation, peak, False,
                    f"peak {peak:.1f} GiB at micro-batch {b.micro_batch} × {b.accumulation} "
                    f"is over the {budget:.1f} GiB usable on {card_key}", how)
        return (training.micro_batch, training.accumulation, peak_at, False,
                f"not even micro-batch 1 fits {card_key} ({budget:.1f} GiB usable) by a "
                f"{b.method} batch search", how)
    for d in sorted((d for d in range(1, training.micro_batch + 1) if per_card % d == 0),
                    reverse=True):
        if d != at and slope is None:
            continue
        est = peak_at + (d - at) * (slope or 0.0)
        if est <= budget:
            return d, per_card // d, est, True, "", (
                f"estimated from the measured peak {peak_at:.2f} GiB at micro-batch {at}"
                + (f" and {slope:.3g} GiB per sample" if slope else ""))
    return (training.micro_batch, training.accumulation, peak_at, False,
            f"measured peak {peak_at:.1f} GiB at micro-batch {at} leaves no micro-batch that "
            f"divides the per-card batch {per_card} under {budget:.1f} GiB usable on "
            f"{card_key}", "")


def apply_training(preset: Preset, training: Training, cfgs: list[Config], m: Measurements,
                   card_key: str, card: Card, catalog: Catalog,
                   estimate: Estimate = "cautious", cpu_step_times: bool = False
                   ) -> tuple[list[Config], list[str], list[str]]:
    """The configurations with measured figures; notes for the decisions; warnings. A
    configuration the measurements did not time keeps its previous figures whole; on a CPU
    only the memory is taken (`smoke_test`)."""
    from planner.figures.multicard import multi_card  # loads only for measured plans

    budget = memory_budget(card, preset.overheads)
    measured = m.by_config()
    out: list[Config] = []
    smoke = smoke_test(m, cpu_step_times)
    notes: list[str] = [CPU_KEPT] if smoke else []
    warnings: list[str] = []
    for cfg in cfgs:
        cm = measured.get(cfg.name)
        if cm is not None and cm.outcome != "measured":
            warnings.append(f"{cfg.name}: its trial {OUTCOME_WORDS[cm.outcome]} "
                            f"({cm.reason}): no figure from it; its previous figures are kept")
            out.append(cfg)
            continue
        if cm is None or (m.partial and cm.step_time is None):
            warnings.append(f"{cfg.name} is not in the measurements: its previous figures are "
                            "kept")
            out.append(cfg)
            continue
        # A trial timed the run on all its cards: all-reduce and DDP memory are in it.
        mc = None if m.workload.source == "trial" else multi_card(
            card, training.cards_per_run, cm.trainable_params)
        if cm.memory is None:
            mb, acc, peak, fits, reason, how = (cfg.micro_batch, cfg.accumulation, cfg.peak_gib,
                                                cfg.fits, cfg.reason, "")
            warnings.append(f"{cfg.name}: no peak memory in the measurements (the command "
                            "reported none): its previous memory figure is kept")
        else:
            mb, acc, peak, fits, reason, how = choose_batch(
                cm, training, card_key, budget - (mc.extra_gib if mc else 0.0))
        step = cfg.step_time if smoke else step_figure(cm, m, card_key, card, catalog,
                                                       estimate, cpu_step_times)
        if mc is not None:
            peak += mc.extra_gib
            timing = "" if smoke else f"{mc.time_note()}; "
            notes.append(f"{cfg.name}: {mc.cards} cards per run: {timing}{mc.memory_note()}")
            if step is not None and not smoke:
                step = step.model_copy(update={"value": step.value + mc.exposed_s,
                                               "note": f"{step.note}; {mc.time_note()}"})
        if step is None:
            warnings.append(f"{cfg.name}: no usable step time in the measurements: the "
                            "entered one is kept")
            step = cfg.step_time
        elif (mb, acc) != (cm.micro_batch, cm.accumulation):
            step = step.model_copy(update={"note": step.note + f"; assumed unchanged at "
                                           f"micro-batch {mb} × {acc} (same samples per step)"})
        decision = ""
        if fits and mb < training.micro_batch:
            decision = (f"{cfg.name}: micro-batch {mb} × accumulation {acc} keeps the "
                        f"effective batch {training.rule_batch} on {card_key} ({how}; planned "
                        f"peak {peak:.2f} of {budget:.1f} GiB)")
        elif fits and how:
            notes.append(f"{cfg.name}: micro-batch {mb} × accumulation {acc} kept on "
                         f"{card_key} ({how}; planned peak {peak:.2f} of {budget:.1f} GiB)")
        warnings += [f"{cfg.name}: {flag}" for flag in cm.flags]
        out.append(cfg._replace(
            step_time=step,
            peak_memory=memory_figure(cm, m, card_key, catalog) or cfg.peak_memory,
            micro_batch=mb, accumulation=acc, peak_gib=peak, fits=fits, reason=reason,
            decision=decision))
    return out, notes, warnings


def apply_embedding(preset: Preset, m: Measurements, card_key: str, card: Card,
                    catalog: Catalog, estimate: Estimate = "cautious",
                    cpu_step_times: bool = False) -> tuple[Preset, list[str]]:
    """The preset with its throughput replaced by the measured (or scaled) one."""
    e = preset.embedding
    assert e is not None
    kept = e.throughput_tokens_per_s.source if e.throughput_tokens_per_s else "entered"
    cm = m.by_config().get("embedding")
    if cm is None or not cm.tokens_per_step:
        return preset, [f"the measurements hold no embedding batch: the {kept} throughput "
                        "is kept"]
    if smoke_test(m, cpu_step_times):
        return preset, ["measured on CPU: memory used, throughput kept"]
    step = step_figure(cm, m, card_key, card, catalog, estimate, cpu_step_times)
    if step is None:
        return preset, [f"the embedding batch was not timed: the {kept} throughput is kept"]
    fig = step.model_copy(update={
        "value": cm.tokens_per_step / step.value,
        "low": cm.tokens_per_step / step.high if step.high else None,
        "high": cm.tokens_per_step / step.low if step.low else None,
        "note": f"{cm.tokens_per_step} padded tokens per batch ÷ step time; {step.note}"})
    warnings = []
    if m.dtype != e.run_dtype:
        warnings.append(f"the embedding batch was measured in {m.dtype}, the runs compute in "
                        f"{e.run_dtype} (the command's --dtype): measure in the run's "
                        "precision, or give the command --dtype")
    budget = memory_budget(card, preset.overheads)
    if cm.memory is not None and cm.memory.peak_gib > budget:
        warnings.append(f"the longest batch peaks at {cm.memory.peak_gib:.1f} GiB, over the "
                        f"{budget:.1f} GiB usable on {card_key}: lower the token budget")
    new = e.model_copy(update={"throughput_tokens_per_s": fig})
    return preset.model_copy(update={"embedding": new}), warnings

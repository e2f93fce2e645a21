"""The analytic tier on a card: figures from the formulas of `planner.figures.analytic`, computed on
the model the preset describes (`[ablation.model]`, see `planner.spec.model_size`), moved between
cards by the calibrated rule of `planner.figures.calibration`. No torch, nothing measured.

Also the check that entered figures and the analytic ones agree within a factor of 2.
"""

from __future__ import annotations

from typing import Any

from planner.errors import InputError
from planner.figures.analytic import (
    GIB,
    reference_memory,
    reference_params,
    reference_split,
)
from planner.figures.efficiency import Work, width_of
from planner.figures.estimates import DEFAULT_ESTIMATE, on_card, replace_costed, set_training
from planner.figures.measured import spec_of
from planner.figures.scaling import Span, analytic_step_time, planned_on
from planner.spec.catalog import Catalog
from planner.spec.costs import Estimate, Figure
from planner.spec.measure import BUILT_IN, MeasureSpec, resolve_reference
from planner.spec.preset import Costed, Preset

DISAGREE = 2.0
"""Entered and analytic step times further apart than this factor are reported."""


def _spec(preset: Preset) -> tuple[MeasureSpec | None, str]:
    """The reference the analytic tier computes on, and what it is in words."""
    spec = spec_of(preset)
    t = preset.training
    model = t.model if t is not None else None
    if model is not None and model.params is None:
        base = spec if spec is not None and spec.reference in BUILT_IN else MeasureSpec(
            reference="transformer")
        return base.model_copy(update=model.sizes()), "the model of [model]"
    if spec is None or spec.reference not in BUILT_IN:
        return None, ""
    return spec, "the measurement section's reference (a stand-in, not your model)"


def step_work(preset: Preset, name: str, factors: dict[str, Any]
              ) -> tuple[float, Work] | None:
    """FLOPs of one optimizer step of configuration `name` and the step's shape for the
    efficiency model (None: nothing to compute on)."""
    t = preset.training
    if t is None:
        return None
    model = t.model
    ckpt = factors.get("activation_checkpointing") is True
    if model is not None and model.params is not None:
        assert model.tokens_per_sample is not None
        recompute = 4.0 / 3.0 if ckpt else 1.0
        flops = (6.0 * model.params * model.tokens_per_sample * t.micro_batch
                 * t.accumulation * recompute)
        # A model given only by its parameters: all matrix products, width guessed.
        return flops, Work(gemm=flops, attn=0.0, d_model=width_of(model.params),
                           tokens=float(t.micro_batch * model.tokens_per_sample),
                           checkpointing=ckpt)
    spec, _ = _spec(preset)
    if spec is None:
        return None
    s, _ = resolve_reference(spec, factors, field=f"{preset.campaign.kind}.{name}")
    gemm, attn = reference_split(s, t.micro_batch)
    flops = (gemm + attn) * t.accumulation
    return flops, Work(gemm=gemm * t.accumulation, attn=attn * t.accumulation,
                       d_model=float(s["d_model"]), tokens=float(t.micro_batch * s["seq_len"]),
                       checkpointing=bool(s.get("activation_checkpointing")))


def step_flops(preset: Preset, name: str, factors: dict[str, Any]) -> float | None:
    """FLOPs of one optimizer step of configuration `name` (None: nothing to compute on)."""
    sw = step_work(preset, name, factors)
    return sw[0] if sw is not None else None


def trainable_params(preset: Preset, name: str, factors: dict[str, Any]) -> int:
    """Parameters that receive gradients (what a data-parallel run all-reduces)."""
    t = preset.training
    assert t is not None
    if t.model is not None and t.model.params is not None:
        return t.model.params
    spec, _ = _spec(preset)
    assert spec is not None
    s, _ = resolve_reference(spec, factors, field=f"{preset.campaign.kind}.{name}")
    return reference_params(s).trainable


def with_cards(span: Span, preset: Preset, name: str, factors: dict[str, Any], key: str,
               catalog: Catalog) -> Span:
    """`span` of one card's share, plus the exposed all-reduce of a run on several cards."""
    t = preset.training
    if t is None or t.cards_per_run <= 1:
        return span
    from planner.figures.multicard import multi_card  # only for runs on several cards

    mc = multi_card(catalog.get(key), t.cards_per_run, trainable_params(preset, name, factors))
    assert mc is not None
    extra = mc.exposed_s
    return Span(typical=span.typical + extra, fast=span.fast + extra, slow=span.slow + extra,
                note=f"{span.note}; {mc.time_note()}")


def _figure(span: Span, estimate: Estimate, key: str, what: str) -> Figure:
    return Figure(value=span.pick(estimate), source="analytic", card=key, low=span.fast,
                  high=span.slow, note=f"{span.note}; computed on {what}; {planned_on(estimate)}")


def analytic_on(preset: Preset, key: str, catalog: Catalog,
                estimate: Estimate = DEFAULT_ESTIMATE) -> Preset:
    """The preset on card `key` with analytic figures (for comparing; adopting a card keeps
    the preset's own figures)."""
    spec, what = _spec(preset)
    kind = preset.campaign.kind
    t = preset.training
    has_params = t is not None and t.model is not None and t.model.params is not None
    if preset.embedding is not None:
        from planner.figures.encoder_tier import embedding_analytic

        return embedding_analytic(preset, key, catalog, estimate)
    if spec is None and not has_params:
        raise InputError("the analytic tier needs the model: describe it in [" + kind +
                         ".model] (params and tokens_per_sample, or the reference sizes) or "
                         "give a reference measurement section", field=f"{kind}.model")
    catalog.get(key, field="--cards")
    moved = on_card(preset, key)
    dtype = spec.dtype if spec is not None else "bf16"
    if t is not None:
        mb = t.micro_batch

        def figures(name: str, c: Costed, factors: dict[str, Any]) -> dict[str, Any]:
            sw = step_work(preset, name, factors)
            assert sw is not None
            flops, work = sw
            span = with_cards(analytic_step_time(flops, key, catalog, dtype, work),
                              preset, name, factors, key, catalog)
            if has_params or spec is None:
                return {"step_time_s": _figure(span, estimate, key,
                                               "params × tokens of [model]")}
            s, _ = resolve_reference(spec, factors, field=f"{kind}.{name}")
            mem, one = reference_memory(s, mb), reference_memory(s, 1)
            per_sample = (mem.activations - one.activations) / GIB / max(mb - 1, 1)
            parts = ", ".join(f"{k} {v:.2f}" for k, v in mem.gib().items() if k != "total")
            return {"step_time_s": _figure(span, estimate, key, what),
                    "peak_memory_gib": Figure(
                        value=mem.total / GIB, source="analytic", card=key,
                        note=f"weights + gradients + optimizer + activations: {parts} GiB "
                             "(ZeRO §3.1; Korthikanti et al. 2022)"),
                    "memory_per_sample_gib": per_sample or None}

        return set_training(moved, replace_costed(t, figures))
    raise AssertionError("a preset is a training or an embedding campaign")


def disagreements(preset: Preset, entered: dict[str, Figure], planned: dict[str, Figure],
                  catalog: Catalog) -> list[str]:
    """Configurations whose entered step time and the analytic one differ by more than
    `DISAGREE`×, in words. `entered`: the preset's step times derived for its card;
    `planned`: the step times planned (an analytic one there is compared as it is)."""
    t = preset.training
    if t is None:
        return []
    key = preset.campaign.card
    _, what = _spec(preset)
    if t.model is not None and t.model.params is not None:
        what = "params × tokens of [model]"
    spec = spec_of(preset)
    dtype = spec.dtype if spec is not None else "bf16"
    out: list[str] = []
    entries: list[tuple[str, Costed, dict[str, Any]]] = [
        ("baseline", t.baseline, dict(t.baseline.factors))]
    entries += [(v.name, v, {**t.baseline.factors, **v.changes}) for v in t.variants]
    for name, c, factors in entries:
        base, plan = entered.get(name), planned.get(name)
        if c.step_time_s.source != "entered" or base is None:
            continue
        if plan is not None and plan.source == "analytic":
            analytic, what_here = plan.value, "the measured model's counted FLOPs"
        else:
            try:
                sw = step_work(preset, name, factors)
            except InputError:
                continue
            if sw is None:
                continue
            analytic = analytic_step_time(sw[0], key, catalog, dtype, sw[1]).typical
            what_here = what
        ratio = base.value / analytic
        if ratio > DISAGREE or ratio < 1 / DISAGREE:
            out.append(f"{name}: the entered step time ({base.value:.3g} s on {key}) and the "
                       f"analytic one ({analytic:.3g} s, from {what_here}) differ "
                       f"{max(ratio, 1 / ratio):.1f}×: one of them describes another model; "
                       f"check the entered figure and [{preset.campaign.kind}.model]")
    return out


def check_entered(preset: Preset, catalog: Catalog) -> list[str]:
    """`disagreements` of the preset's own figures on its campaign's card."""
    from planner.figures.estimates import figures_on

    t = figures_on(preset, catalog, "typical").training
    if t is None:
        return []
    steps = {"baseline": t.baseline.step_time_s,
             **{v.name: v.step_time_s for v in t.variants}}
    return disagreements(preset, steps, {}, catalog)

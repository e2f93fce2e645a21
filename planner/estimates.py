"""A preset's figures moved to another card, without measurements.

- `entered_on`: the preset's figures (entered for its own card) carried to another card:
  step time by the conservative roofline rule of `planner.scaling` (no MFU known), peak
  memory unchanged; each labelled `scaled from <card>`.
- `analytic_on`: the analytic tier — figures from the formulas of `planner.analytic` and the
  preset's reference workload, labelled `analytic`; no torch, nothing measured.
"""

from __future__ import annotations

from typing import Any

from planner.analytic import GIB, reference_flops, reference_memory
from planner.catalog import Catalog, Dtype
from planner.costs import Figure
from planner.errors import InputError
from planner.measure_spec import resolve_reference
from planner.measured import spec_of
from planner.preset import Costed, Preset, Training
from planner.scaling import analytic_step_time, card_rates, scale_step_time


def with_card(preset: Preset, key: str) -> Preset:
    """The same preset on another card model. A price the preset gives is for its own card,
    so it is dropped for any other (the catalog's price, if any, applies)."""
    c = preset.campaign
    if key == c.card:
        return preset
    campaign = c.model_copy(update={"card": key, "price_per_card_hour": None})
    return preset.model_copy(update={"campaign": campaign})


def _replace_costed(training: Training, fn: Any) -> Training:
    base = training.baseline.model_copy(update=fn("baseline", training.baseline,
                                                  dict(training.baseline.factors)))
    variants = [v.model_copy(update=fn(v.name, v, {**training.baseline.factors, **v.changes}))
                for v in training.variants]
    return training.model_copy(update={"baseline": base, "variants": variants})


def _set_training(preset: Preset, training: Training) -> Preset:
    return preset.model_copy(update={preset.campaign.kind: training})


def _dtype(preset: Preset) -> Dtype:
    spec = spec_of(preset)
    return spec.dtype if spec is not None else "bf16"


def entered_on(preset: Preset, key: str, catalog: Catalog) -> Preset:
    """The preset on card `key`, its figures scaled from its own card."""
    own = catalog.get(preset.campaign.card)
    dst = catalog.get(key, field="--cards")
    moved = with_card(preset, key)
    if key == preset.campaign.card:
        return moved
    src_rates, dst_rates = card_rates(own, _dtype(preset)), card_rates(dst, _dtype(preset))

    def scale(fig: Figure) -> Figure:
        t, note = scale_step_time(fig.value, None, src_rates, dst_rates)
        return Figure(value=t, source="scaled", device=own.name,
                      note=f"{fig.source} figure; {note}")

    def carry(fig: Figure) -> Figure:
        return Figure(value=fig.value, source="scaled", device=own.name,
                      note=f"{fig.source} figure carried over unchanged (same dtype and batch)")

    training = moved.training
    if training is not None:
        return _set_training(moved, _replace_costed(training, lambda name, c, f: {
            "step_time_s": scale(c.step_time_s), "peak_memory_gib": carry(c.peak_memory_gib)}))
    e = moved.embedding
    assert e is not None
    fig = e.throughput_tokens_per_s
    t, note = scale_step_time(1.0 / fig.value, None, src_rates, dst_rates)
    new = Figure(value=1.0 / t, source="scaled", device=own.name,
                 note=f"{fig.source} figure; {note}")
    return moved.model_copy(update={"embedding": e.model_copy(
        update={"throughput_tokens_per_s": new})})


def analytic_on(preset: Preset, key: str, catalog: Catalog) -> Preset:
    """The preset on card `key` with analytic figures from its reference workload."""
    spec = spec_of(preset)
    kind = preset.campaign.kind
    if spec is None or spec.reference is None:
        raise InputError("the analytic tier needs a reference workload (reference = "
                         "\"transformer\" or \"encoder\" with its sizes)",
                         field=f"{kind}.measure")
    card = catalog.get(key, field="--cards")
    rates = card_rates(card, spec.dtype)
    moved = with_card(preset, key)
    training = moved.training
    if training is not None:
        mb, acc = training.micro_batch, training.accumulation

        def figures(name: str, c: Costed, factors: dict[str, Any]) -> dict[str, Any]:
            s, _ = resolve_reference(spec, factors, field=f"{kind}.{name}")
            flops = reference_flops(s, mb) * acc
            t, note = analytic_step_time(flops, rates)
            mem = reference_memory(s, mb)
            one = reference_memory(s, 1)
            per_sample = (mem.activations - one.activations) / GIB / max(mb - 1, 1)
            parts = ", ".join(f"{k} {v:.2f}" for k, v in mem.gib().items() if k != "total")
            return {"step_time_s": Figure(value=t, source="analytic", note=note),
                    "peak_memory_gib": Figure(
                        value=mem.total / GIB, source="analytic",
                        note=f"weights + gradients + optimizer + activations: {parts} GiB "
                             "(ZeRO §3.1; Korthikanti et al. 2022)"),
                    "memory_per_sample_gib": per_sample or None}

        return _set_training(moved, _replace_costed(training, figures))
    e = moved.embedding
    assert e is not None
    seq = min(e.lengths.max, e.truncation_tokens)
    batch = max(1, e.grouped_budget // seq) if e.batching == "length-grouped" else e.batch_size
    s, _ = resolve_reference(spec.model_copy(update={"seq_len": seq}), {})
    t, note = analytic_step_time(reference_flops(s, batch, training=False), rates)
    fig = Figure(value=batch * seq / t, source="analytic",
                 note=f"{batch} × {seq} tokens per batch; {note}")
    return moved.model_copy(update={"embedding": e.model_copy(
        update={"throughput_tokens_per_s": fig})})


"""The analytic tier of an embedding campaign: the encoder's FLOPs per padded token at the
share of the peak published encoders reach (`planner.figures.encoder`), on one card. What
`compare --analytic` shows, and what a preset without a throughput plans on."""

from __future__ import annotations

from planner.errors import InputError
from planner.figures.analytic import reference_flops
from planner.figures.measured import spec_of
from planner.figures.scaling import planned_on
from planner.spec.catalog import Catalog
from planner.spec.costs import Estimate, Figure
from planner.spec.measure import BUILT_IN, resolve_reference
from planner.spec.preset import Preset


def embedding_analytic(preset: Preset, key: str, catalog: Catalog,
                       estimate: Estimate) -> Preset:
    """The embedding preset on card `key` with the analytic throughput: the encoder's FLOPs
    per padded token (the measurement section's reference encoder, or the shape of the
    encoder it names) at the share of the peak published encoders reach, in the precision
    the run computes in (`Embedding.run_dtype`)."""
    from planner.figures.efficiency import chip_fit, load_efficiency
    from planner.figures.encoder import per_token_flops, tokens_per_s

    e = preset.embedding
    assert e is not None
    eff = load_efficiency()
    cal = eff.encoder
    assert cal is not None
    d0 = chip_fit(cal.chip, eff.fit)[1].width_scale
    catalog.get(key, field="--cards")
    seq = min(e.lengths.max, e.truncation_tokens)
    # A length-grouped batch holds at most batch_size texts under the token budget.
    batch = (max(1, min(e.batch_size, e.grouped_budget // seq))
             if e.batching == "length-grouped" else e.batch_size)
    spec = spec_of(preset)
    if spec is not None and spec.reference in BUILT_IN:
        s, _ = resolve_reference(spec.model_copy(update={"seq_len": seq}), {})
        flops = reference_flops(s, batch, training=False) / (batch * seq)
        width, what = float(s["d_model"]), "the measurement section's reference encoder"
        layers = int(s["layers"])
    elif e.model in cal.shapes:
        flops = per_token_flops(cal.shapes[e.model], seq)
        width, what = float(cal.shapes[e.model].d_model), f"the shape of {e.model}"
        layers = cal.shapes[e.model].layers
    else:
        raise InputError(f"the analytic tier needs the encoder's sizes: give [embedding."
                         f"measure] with reference = \"encoder\" (no shape is known for "
                         f"{e.model!r})", field="embedding.measure")
    typical, low, high, note = tokens_per_s(flops, width, key, catalog, e.run_dtype, cal, d0,
                                            layers, float(batch * seq))
    fig = Figure(value=low if estimate == "cautious" else typical, source="analytic",
                 card=key, low=low, high=high,
                 note=f"{batch} × {seq} tokens per batch, computed on {what}; {note}; "
                      f"{planned_on(estimate)}")
    # Only the card changes (as `estimates.on_card` does), then the throughput.
    moved = preset if key == preset.campaign.card else preset.model_copy(
        update={"campaign": preset.campaign.model_copy(update={"card": key})})
    assert moved.embedding is not None
    return moved.model_copy(update={"embedding": moved.embedding.model_copy(
        update={"throughput_tokens_per_s": fig})})

"""Figures anchored to their card, and the preset moved between cards.

Every figure of a preset names the card it was taken on (`Figure.card`, its anchor). A card
change changes only the campaign's card (`on_card`); planning then derives each figure for
the campaign's card from its anchor (`figures_on`), labelled `scaled from <anchor card>`,
never from a figure derived before. So any sequence of card changes that returns to the
anchor card gives back the same figures and the same plan.

- step time: divided by the calibrated speed-up of `planner.figures.calibration` (with its range;
  the plan takes the slow end when `estimate = "cautious"`);
- peak memory: carried over unchanged (same dtype, same batch);
- embedding throughput: multiplied by the speed-up (its slow end when cautious).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from planner.figures.measured import spec_of
from planner.figures.scaling import planned_on, scale_step_time
from planner.spec.catalog import Catalog, Dtype
from planner.spec.costs import Estimate, Figure
from planner.spec.matrix import Config
from planner.spec.preset import Costed, Preset, Training

ESTIMATES = ("typical", "cautious")
DEFAULT_ESTIMATE: Estimate = "cautious"
"""Scaled and analytic figures are planned on the slow end of their range unless asked."""


def on_card(preset: Preset, key: str) -> Preset:
    """The same preset on card model `key`: only the card changes. Figures keep the card
    they were taken on, and a price the preset gives keeps the card it is for; planning
    derives both for `key`. The one way every front end (Compare, the TUI, `advise`)
    puts a campaign on another card."""
    c = preset.campaign
    if key == c.card:
        return preset
    return preset.model_copy(update={"campaign": c.model_copy(update={"card": key})})


def dtype_of(preset: Preset) -> Dtype:
    """The precision the preset's figures were taken in (bf16 when it does not say)."""
    if preset.embedding is not None:
        # An embedding throughput holds for the precision the run computes in.
        return preset.embedding.run_dtype
    spec = spec_of(preset)
    return spec.dtype if spec is not None else "bf16"


def step_on(fig: Figure, key: str, catalog: Catalog, dtype: Dtype, estimate: Estimate,
            flops: float | None = None) -> Figure:
    """A step time figure on card `key`, derived from its anchor."""
    anchor = fig.card or key
    if anchor == key:
        return fig
    span = scale_step_time(fig.value, flops, anchor, key, catalog, dtype)
    return Figure(value=span.pick(estimate), source="scaled", card=key,
                  device=catalog.get(anchor).name, low=span.fast, high=span.slow,
                  note=f"{fig.source} {fig.value:.4g} s on {anchor}; {span.note}; "
                       f"{planned_on(estimate)}")


def memory_on(fig: Figure, key: str, catalog: Catalog) -> Figure:
    """A peak memory figure on card `key`: the anchor's value, carried over."""
    anchor = fig.card or key
    if anchor == key:
        return fig
    return Figure(value=fig.value, source="scaled", card=key, device=catalog.get(anchor).name,
                  note=f"{fig.source} on {anchor}, carried over unchanged (same dtype and "
                       "batch): allocator and library workspaces differ between cards")


def throughput_on(fig: Figure, key: str, catalog: Catalog, dtype: Dtype,
                  estimate: Estimate) -> Figure:
    """A throughput figure (per second) on card `key`, derived from its anchor."""
    anchor = fig.card or key
    if anchor == key:
        return fig
    span = scale_step_time(1.0 / fig.value, None, anchor, key, catalog, dtype)
    value = 1.0 / span.pick(estimate)
    return Figure(value=value, source="scaled", card=key, device=catalog.get(anchor).name,
                  low=1.0 / span.slow, high=1.0 / span.fast,
                  note=f"{fig.source} {fig.value:.4g}/s on {anchor}; {span.note} (training "
                       f"calibration applied to the forward pass); "
                       f"{planned_on(estimate)}")


def replace_costed(training: Training,
                   fn: Callable[[str, Costed, dict[str, Any]], dict[str, Any]]) -> Training:
    """The training workload with each configuration's figures updated by `fn(name, costed,
    factors)`."""
    base = training.baseline.model_copy(update=fn("baseline", training.baseline,
                                                  dict(training.baseline.factors)))
    variants = [v.model_copy(update=fn(v.name, v, {**training.baseline.factors, **v.changes}))
                for v in training.variants]
    return training.model_copy(update={"baseline": base, "variants": variants})


def set_training(preset: Preset, training: Training) -> Preset:
    """The preset with its training workload replaced."""
    return preset.model_copy(update={preset.campaign.kind: training})


def anchors(preset: Preset) -> list[tuple[str, Figure]]:
    """Every figure of the preset with the field path that holds it."""
    kind = preset.campaign.kind
    t = preset.training
    if t is None:
        assert preset.embedding is not None
        fig = preset.embedding.throughput_tokens_per_s
        return [] if fig is None else [(f"{kind}.throughput_tokens_per_s", fig)]
    out: list[tuple[str, Figure]] = []
    for where, c in [("baseline", t.baseline),
                     *((f"variants[{i}]", v) for i, v in enumerate(t.variants))]:
        out += [(f"{kind}.{where}.step_time_s", c.step_time_s),
                (f"{kind}.{where}.peak_memory_gib", c.peak_memory_gib)]
    return out


def figures_on(preset: Preset, catalog: Catalog, estimate: Estimate = DEFAULT_ESTIMATE,
               source: str | None = None) -> Preset:
    """The preset with every figure derived for its campaign's card from its anchor (what
    the plan uses; the preset itself keeps its anchors). Raises InputError naming the field
    of a figure anchored to a card the catalog does not know."""
    for field, fig in anchors(preset):
        if fig.card:
            catalog.get(fig.card, file=source, field=f"{field}.card")
    key, dtype = preset.campaign.card, dtype_of(preset)
    training = preset.training
    if training is not None:
        return set_training(preset, replace_costed(training, lambda name, c, f: {
            "step_time_s": step_on(c.step_time_s, key, catalog, dtype, estimate),
            "peak_memory_gib": memory_on(c.peak_memory_gib, key, catalog)}))
    e = preset.embedding
    assert e is not None
    if e.throughput_tokens_per_s is None:
        # No figure given: the analytic estimate on the campaign's card.
        from planner.figures.encoder_tier import embedding_analytic

        return embedding_analytic(preset, key, catalog, estimate)
    fig = throughput_on(e.throughput_tokens_per_s, key, catalog, dtype, estimate)
    return preset.model_copy(update={"embedding": e.model_copy(
        update={"throughput_tokens_per_s": fig})})


def entered_configs(preset: Preset, cfgs: list[Config],
             before: dict[str, tuple[Figure, Figure]]) -> list[str]:
    """Configurations whose planned figures rest on entered ones (as entered, or scaled
    from them onto another card), measurements not having replaced them."""
    t = preset.training
    assert t is not None
    own = {"baseline": t.baseline, **{v.name: v for v in t.variants}}
    out = []
    for cfg in cfgs:
        step, peak = before[cfg.name]
        c = own[cfg.name]
        if ((c.step_time_s.source == "entered" and cfg.step_time == step)
                or (c.peak_memory_gib.source == "entered" and cfg.peak_memory == peak)):
            out.append(cfg.name)
    return out

"""The comparison behind `campaign-planner compare`: the same campaign on other card
models, side by side.

Only the card changes (`planner.figures.estimates.on_card`): same preset, same data, precision and
expected outputs. Each card's figures are derived from their anchors: the measurements when
given (measured on that card, or scaled from the card measured on), else the preset's own
figures scaled from the card each was taken on, or with `--analytic` the formulas on the
model the preset describes; every figure keeps its provenance and its range.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.errors import InputError
from planner.figures.analytic_tier import analytic_on, check_entered
from planner.figures.estimates import DEFAULT_ESTIMATE, on_card
from planner.figures.measurements import Measurements
from planner.spec.base import Lax
from planner.spec.catalog import Catalog
from planner.spec.costs import Estimate
from planner.spec.preset import Preset

DEFAULT_CARDS = ("a6000", "a40", "rtx6000ada", "l40s", "a100-80")




class ConfigOnCard(Lax):
    """One configuration (baseline or variant) on one card."""

    config: str
    """`baseline` or the variant's name."""
    fits: bool
    """Whether it fits the card's memory."""
    micro_batch: int
    """Micro-batch planned."""
    accumulation: int
    """Accumulation planned."""
    planned_peak_gib: float
    """Peak expected as planned."""
    headroom_gib: float
    """Memory left under the budget (card memory less the margin); negative: over."""
    step_time_s: float
    """Seconds per optimizer step."""
    step_time_range: str = ""
    """Low–high range of the step time, for scaled and analytic figures."""
    step_time_source: str
    """Provenance of the step time, in words."""
    peak_source: str
    """Provenance of the peak, in words."""


class CardComparison(Lax):
    """The campaign planned on one card model."""

    card: str
    """Catalog key."""
    card_name: str
    """Card model in full."""
    memory_gib: float
    """Card memory."""
    cards: int
    """Cards rented (the preset's count)."""
    planned: bool = True
    """False when the campaign cannot be planned on this card (see `error`)."""
    error: str = ""
    """Why not."""
    runs_fit: int = 0
    """Matrix runs (training) or representation versions (embedding) that fit."""
    runs_total: int = 0
    """Matrix runs or versions wanted."""
    makespan_h: float = 0.0
    """Hour the last scheduled run ends."""
    busy_card_hours: float = 0.0
    """Card-hours with work on them."""
    utilization: float = 0.0
    """Busy ÷ usable card-hours."""
    cost_total: float | None = None
    """Price × card-hours bought, where a price is known."""
    currency: str = "USD"
    """Currency."""
    configs: list[ConfigOnCard] = []
    """Per configuration (training)."""
    throughput_tokens_per_s: float | None = None
    """Per card (embedding)."""
    estimate: str = "cautious"
    """Which end of their range scaled and analytic figures were planned on."""
    provenance: list[str] = []
    """Distinct provenance labels of the figures used."""
    warnings: list[str] = []
    """Entered and analytic figures that disagree by more than 2×."""


def compare_cards(preset: Preset, catalog: Catalog, cards: Sequence[str],
                  measurements: Measurements | None = None, *,
                  analytic: bool = False,
                  estimate: Estimate = DEFAULT_ESTIMATE) -> list[CardComparison]:
    """Plan `preset` on each card model of `cards`; nothing else changes."""
    from planner.campaign import plan_campaign

    out: list[CardComparison] = []
    for key in cards:
        card = catalog.get(key, field="--cards")
        moved = (analytic_on(preset, key, catalog, estimate)
                 if analytic and measurements is None else on_card(preset, key))
        head = dict(card=key, card_name=card.name, memory_gib=card.memory_gib,
                    cards=preset.campaign.cards)
        try:
            plan = plan_campaign(moved, catalog, measurements=measurements, estimate=estimate)
        except InputError as exc:
            if exc.file and measurements is not None and exc.file == measurements.file:
                raise
            out.append(CardComparison(**head, planned=False, error=exc.message))
            continue
        s, a = plan.summary, plan.assumptions
        labels: list[str] = []
        configs = []
        for f in a.figures:
            labels += [f.step_time_s.label(), f.peak_memory_gib.label()]
            configs.append(ConfigOnCard(
                config=f.config, fits=f.fits, micro_batch=f.micro_batch,
                accumulation=f.accumulation, planned_peak_gib=round(f.planned_peak_gib, 3),
                headroom_gib=round(a.memory_budget_gib - f.planned_peak_gib, 3),
                step_time_s=f.step_time_s.value, step_time_range=f.step_time_s.span(),
                step_time_source=f.step_time_s.label(),
                peak_source=f.peak_memory_gib.label()))
        throughput = a.throughput_tokens_per_s
        if throughput is not None:
            labels.append(throughput.label())
        emb = plan.embedding
        out.append(CardComparison(
            **head, runs_fit=emb.versions_fit if emb else s.matrix_runs_fit,
            runs_total=emb.versions_wanted if emb else s.matrix_runs,
            makespan_h=s.makespan_h, busy_card_hours=s.busy_card_hours,
            utilization=s.utilization, cost_total=s.cost_total,
            currency=plan.campaign.currency, configs=configs,
            throughput_tokens_per_s=throughput.value if throughput else None,
            provenance=list(dict.fromkeys(labels)), estimate=estimate,
            warnings=check_entered(on_card(preset, key), catalog)))
    return out


def render(preset: Preset, rows: list[CardComparison]) -> str:
    """The comparison as text: one line per card, then per-configuration tables."""
    unit = "versions" if preset.embedding is not None else "runs"
    lines = [f"{preset.campaign.name}: the same campaign on {len(rows)} card models "
             f"({preset.campaign.cards} cards, {preset.campaign.hours:g} h); only the card "
             "changes", "",
             f"  {'card':<12} {'memory':>7} {unit + ' fit':>10} {'last ends':>10} "
             f"{'util':>6} {'cost':>12}  card"]
    for r in rows:
        if not r.planned:
            lines.append(f"  {r.card:<12} {r.memory_gib:>4g} GB  cannot plan: {r.error}")
            continue
        cost = f"{r.cost_total:,.0f} {r.currency}" if r.cost_total is not None else "—"
        lines.append(f"  {r.card:<12} {r.memory_gib:>4g} GB {f'{r.runs_fit}/{r.runs_total}':>10} "
                     f"{f'h {r.makespan_h:.1f}':>10} {r.utilization:>6.0%} {cost:>12}  "
                     f"{r.card_name}")
    planned = [r for r in rows if r.planned and r.configs]
    if planned:
        names = [c.config for c in planned[0].configs]
        width = max(len("config"), *(len(n) for n in names))
        for title, cell in (
            ("Memory headroom, GiB under card memory less margin (✗: does not fit)",
             lambda c: f"{c.headroom_gib:.1f}" + ("" if c.fits else " ✗")),
            ("Step time, s per optimizer step (range of the estimate)",
             lambda c: f"{c.step_time_s:.3g}" + (f" ({c.step_time_range})"
                                                   if c.step_time_range else "")),
        ):
            cols = [max(11, len(r.card), *(len(cell(c)) for c in r.configs)) for r in planned]
            # Two spaces between cards: a cell with its range never runs into the next.
            lines += ["", title, f"  {'config':<{width}} " + "  ".join(
                f"{r.card:>{w}}" for r, w in zip(planned, cols, strict=True))]
            for i, name in enumerate(names):
                lines.append(f"  {name:<{width}} " + "  ".join(
                    f"{cell(r.configs[i]):>{w}}" for r, w in zip(planned, cols, strict=True)))
    lines += ["", f"Estimates planned on the {rows[0].estimate if rows else 'cautious'} end "
              "(--estimate typical|cautious)", "", "Provenance"]
    for r in rows:
        if r.planned:
            lines.append(f"  {r.card:<12} {'; '.join(r.provenance)}")
    said = list(dict.fromkeys(w for r in rows for w in r.warnings))
    if said:
        lines += ["", "Entered and analytic figures disagree"] + [f"  - {w}" for w in said]
    return "\n".join(lines)

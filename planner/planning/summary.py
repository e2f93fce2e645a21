"""Headline figures of a plan: card-hours, utilization, the variant × seed table, cost."""

from __future__ import annotations

from planner.packing.pack import Packing
from planner.planfile.plan import Run, Summary, TableRow
from planner.spec.matrix import Config, RunSpec
from planner.spec.preset import Preset, Training


def summarize(preset: Preset, training: Training, cfgs: list[Config], specs: list[RunSpec],
              runs: list[Run], usable: float, price: float | None,
              packing: Packing | None = None) -> Summary:
    """Headline figures of a training plan."""
    by_id = {r.id: r for r in runs}
    ends: dict[tuple[str, int], float | None] = {
        (s.config.name, s.seed): (by_id[s.id].end_h if s.id in by_id else None)
        for s in specs if s.kind == "train"
    }
    table = [
        TableRow(
            variant=cfg.name,
            complete_seeds=[s for s in training.seeds if ends[(cfg.name, s)] is not None],
            missing_seeds=[s for s in training.seeds if ends[(cfg.name, s)] is None],
        )
        for cfg in cfgs
    ]
    complete = []
    for seed in training.seeds:
        seed_ends = [ends[(cfg.name, seed)] for cfg in cfgs]
        if all(e is not None for e in seed_ends):
            complete.append((max(e for e in seed_ends if e is not None), seed))
    busy = sum((r.end_h - r.start_h) * len(r.card) for r in runs)
    matrix_fit = sum(1 for e in ends.values() if e is not None)
    figures = summary_figures(preset, usable, price, busy, runs, len(specs),
                              matrix_runs=len(ends), matrix_fit=matrix_fit, table=table,
                              first=min(complete) if complete else None,
                              per_run=matrix_fit or None)
    if packing is None:
        return figures
    return figures.model_copy(update={
        "optimal": "unknown" if packing.optimal is None else packing.optimal,
        "matrix_runs_upper_bound": max(matrix_fit, min(packing.matrix_bound, len(ends))),
    })


def summary_figures(preset: Preset, usable: float, price: float | None, busy: float,
                    runs: list[Run], total: int, *, matrix_runs: int = 0, matrix_fit: int = 0,
                    table: list[TableRow] | None = None,
                    first: tuple[float, int] | None = None,
                    per_run: int | None = None) -> Summary:
    """Headline figures shared by every campaign kind."""
    c = preset.campaign
    bought = c.hours * c.cards
    usable_ch = usable * c.cards
    cost = None if price is None else round(price * bought, 2)
    return Summary(
        card_hours_bought=round(bought, 4),
        reserved_hours=round(c.hours - usable, 4),
        usable_card_hours=round(usable_ch, 4),
        busy_card_hours=round(busy, 4),
        idle_card_hours=round(usable_ch - busy, 4),
        utilization=round(busy / usable_ch, 4) if usable_ch else 0.0,
        runs_total=total,
        runs_scheduled=len(runs),
        matrix_runs=matrix_runs,
        matrix_runs_fit=matrix_fit,
        makespan_h=max((r.end_h for r in runs), default=0.0),
        table=table or [],
        first_complete_seed=first[1] if first else None,
        first_complete_seed_end_h=first[0] if first else None,
        cost_total=cost,
        cost_per_matrix_run=(round(cost / per_run, 2) if cost is not None and per_run else None),
    )

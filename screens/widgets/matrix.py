"""The variant × seed table (or, for an embedding corpus, the batching strategies)."""

from __future__ import annotations

from rich.text import Text

from planner.planning.plan import Plan
from screens.widgets.lines import Lines


def draw(plan: Plan, width: int) -> list[Text]:
    """Header and one line per row; each seed's cell ✓ when its run completes."""
    if plan.embedding is not None:
        e = plan.embedding
        lines = [Text(f"  {'strategy':<16} {'batches':>11} {'useful tokens':>16} "
                      f"{'padding':>8} {'h/version':>10}", style="bold reverse")]
        for b in e.strategies:
            mark = "●" if b.strategy == e.batching else " "
            lines.append(Text(f"{mark} {b.strategy:<16} {b.batches:>11,} "
                              f"{b.useful_tokens:>16,} {b.padding_fraction:>8.1%} "
                              f"{b.hours_per_version:>10.1f}"))
        return lines
    s = plan.summary
    figs = {f.config: f for f in plan.assumptions.figures}
    seeds = sorted({x for row in s.table for x in row.complete_seeds + row.missing_seeds})
    name_w = max(8, *(len(r.variant) for r in s.table))
    cell_w = max(3, *(len(f"s{x}") + 1 for x in seeds))
    head = (f"{'variant':<{name_w}} " + "".join(f"{f's{x}':^{cell_w}}" for x in seeds)
            + f" {'done':>5}  {'mb×acc':>7}  {'step s':>6}  source")
    lines = [Text(head.ljust(width), style="bold reverse")]
    for row in s.table:
        f = figs[row.variant]
        done = set(row.complete_seeds)
        line = Text(f"{row.variant:<{name_w}} ")
        for x in seeds:
            line.append(f"{'✓' if x in done else '✗':^{cell_w}}",
                        "green" if x in done else "bold red")
        line.append(f" {len(done):>2}/{len(seeds):<2}  {f.micro_batch:>3}×{f.accumulation:<3}  "
                    f"{f.step_time_s.value:>6.3g}  {f.step_time_s.label()}"
                    + (f" ({f.step_time_s.span()} s)" if f.step_time_s.span() else ""))
        if not f.fits:
            line.append("  too big for the card", "red")
        lines.append(line)
    return lines


class MatrixTable(Lines):
    """Which runs of the matrix complete, seed by seed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(draw, id=id)

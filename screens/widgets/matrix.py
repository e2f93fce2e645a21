"""The variant × seed table (or, for an embedding corpus, the batching strategies)."""

from __future__ import annotations

import textwrap

from rich.text import Span, Text

from planner.planfile.plan import ConfigFigures, Plan
from screens.widgets.lines import Line, Lines
from screens.widgets.sources import shorten


def _span(f: ConfigFigures) -> str:
    """A step time's range, when it has one: ` (3.56–4.31 s)`."""
    span = f.step_time_s.span()
    return f" ({span} s)" if span else ""


def prepare(plan: Plan, width: int) -> tuple[int, Line]:
    """(Lines, drawer of line y): the header, then one line per row, each seed's cell ✓
    when its run completes; what every row shares is worked out once."""
    if plan.embedding is not None:
        e = plan.embedding
        lines = [Text(f"  {'strategy':<16} {'batches':>11} {'useful tokens':>16} "
                      f"{'padding':>8} {'h/version':>10}", style="bold reverse")]
        for b in e.strategies:
            mark = "●" if b.strategy == e.batching else " "
            lines.append(Text(f"{mark} {b.strategy:<16} {b.batches:>11,} "
                              f"{b.useful_tokens:>16,} {b.padding_fraction:>8.1%} "
                              f"{b.hours_per_version:>10.1f}"))
        return len(lines), lines.__getitem__
    s = plan.summary
    table = s.table
    figs = {f.config: f for f in plan.assumptions.figures}
    seeds = sorted({x for row in table for x in row.complete_seeds + row.missing_seeds})
    name_w = max(8, *(len(r.variant) for r in table))
    cell_w = max(3, *(len(f"s{x}") + 1 for x in seeds))
    head = (f"{'variant':<{name_w}} " + "".join(f"{f's{x}':^{cell_w}}" for x in seeds)
            + f" {'done':>5}  {'mb×acc':>7}  {'step s':>6}  source")
    # A source too long for the line is shortened to its kind and a mark, in full below.
    before = name_w + 1 + cell_w * len(seeds) + 25
    spans = max(len(_span(f)) for f in figs.values()) if figs else 0
    short, legend = shorten((f.step_time_s.label() for f in figs.values()),
                            width - before - spans)
    legend = [piece for text in legend for piece in textwrap.wrap(
        text, max(20, width - 1), subsequent_indent="  ")]

    def line(y: int) -> Text:
        if y == 0:
            return Text(head.ljust(width), style="bold reverse")
        if y > len(table):
            return Text(legend[y - len(table) - 1], style="dim")
        row = table[y - 1]
        f = figs[row.variant]
        done = set(row.complete_seeds)
        # The line's text in one piece and a span per seed's cell: the Text that appending
        # cell by cell makes, without sanitizing each piece on its own.
        parts = [f"{row.variant:<{name_w}} "]
        spans: list[Span] = []
        at = len(parts[0])
        for x in seeds:
            cell = f"{'✓' if x in done else '✗':^{cell_w}}"
            spans.append(Span(at, at + len(cell), "green" if x in done else "bold red"))
            parts.append(cell)
            at += len(cell)
        parts.append(f" {len(done):>2}/{len(seeds):<2}  {f.micro_batch:>3}×{f.accumulation:<3}  "
                     f"{f.step_time_s.value:>6.3g}  {short[f.step_time_s.label()]}{_span(f)}")
        if not f.fits:
            at += len(parts[-1])
            parts.append("  too big for the card")
            spans.append(Span(at, at + len(parts[-1]), "red"))
        return Text("".join(parts), spans=spans)

    return len(table) + 1 + len(legend), line


def draw(plan: Plan, width: int) -> list[Text]:
    """Header and one line per row; each seed's cell ✓ when its run completes."""
    n, line = prepare(plan, width)
    return [line(y) for y in range(n)]


class MatrixTable(Lines):
    """Which runs of the matrix complete, seed by seed."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(draw, prepare=prepare, id=id)

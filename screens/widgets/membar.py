"""Memory bars: each configuration's planned peak against the card's memory, the margin
marked, with the figure's provenance."""

from __future__ import annotations

import textwrap

from rich.text import Text

from planner.planfile.plan import ConfigFigures, Plan
from screens.widgets.lines import Lines
from screens.widgets.sources import shorten


def bar(fig: ConfigFigures, top_gib: float, budget_gib: float, width: int) -> Text:
    """One configuration's bar, `top_gib` wide: filled to its planned peak, shaded up to
    the peak before any micro-batch reduction, `│` where the memory margin starts."""
    width = max(8, width)
    scale = width / top_gib
    filled = min(width, round(fig.planned_peak_gib * scale))
    asked = min(width, round(fig.peak_memory_gib.value * scale))
    limit = min(width - 1, round(budget_gib * scale))
    colour = "green" if fig.fits and fig.planned_peak_gib == fig.peak_memory_gib.value else (
        "yellow" if fig.fits else "red")
    # One span per stretch: filled, shaded, empty, with the margin mark cut in.
    cells = ["█"] * filled + ["▒"] * max(0, asked - filled) + ["·"] * (width - max(filled, asked))
    kinds = [colour] * filled + ["grey50"] * max(0, asked - filled) \
        + ["grey35"] * (width - max(filled, asked))
    cells[limit], kinds[limit] = "│", "bold"
    out = Text()
    start = 0
    for i in range(1, width + 1):
        if i == width or kinds[i] != kinds[start]:
            out.append("".join(cells[start:i]), kinds[start])
            start = i
    return out


def peak(fig: ConfigFigures) -> str:
    """Peak as planned and the reduction, if any."""
    text = f"{fig.planned_peak_gib:5.1f} GiB"
    if fig.planned_peak_gib != fig.peak_memory_gib.value:
        text += f" at mb {fig.micro_batch} ({fig.peak_memory_gib.value:g} before)"
    if not fig.fits:
        text += " ✗ too big"
    return text


def describe(fig: ConfigFigures) -> str:
    """Peak as planned, the reduction if any, and where the figure came from."""
    return f"{peak(fig)}  {fig.peak_memory_gib.label()}"


def _widths(plan: Plan, width: int) -> tuple[int, int]:
    name_w = _name_w(plan)
    return name_w, max(10, min(40, width - name_w - 44))


def sources(plan: Plan, width: int) -> tuple[dict[str, str], list[str]]:
    """Each figure's source as shown (shortened to its kind and a mark when the line has
    no room for it), and the legend lines giving the shortened ones in full."""
    name_w, bar_w = _widths(plan, width)
    figs = plan.assumptions.figures
    room = width - name_w - bar_w - 4 - max(len(peak(f)) for f in figs)
    short, legend = shorten((f.peak_memory_gib.label() for f in figs), room)
    return short, [piece for text in legend for piece in textwrap.wrap(
        text, max(20, width - name_w - 1), subsequent_indent="  ")]


def draw(plan: Plan, width: int) -> list[Text]:
    """One line per configuration: name, bar, figures."""
    a = plan.assumptions
    if not a.figures:
        return [Text("No per-configuration memory figures for this kind of campaign.",
                     style="italic")]
    name_w, bar_w = _widths(plan, width)
    top = max(a.card_memory_gib, *(f.peak_memory_gib.value for f in a.figures))
    short, marks = sources(plan, width)
    lines = []
    for fig in a.figures:
        line = Text(f"{fig.config:<{name_w}.{name_w}} ")
        line.append_text(bar(fig, top, a.memory_budget_gib, bar_w))
        line.append(f" {peak(fig)}  {short[fig.peak_memory_gib.label()]}")
        lines.append(line)
    pad = " " * (name_w + 1)
    lines += [Text(pad + part, style="grey62") for part in [*legend(plan, name_w, width),
                                                             *marks]]
    return lines


SHADED = "▒ peak before a micro-batch reduction"


def legend(plan: Plan, name_w: int, width: int) -> list[str]:
    """What the margin mark and the shading mean: one line, or two on a narrow screen."""
    a = plan.assumptions
    usable = (f"│ {a.memory_budget_gib:g} GiB usable of {a.card_memory_gib:g} GiB "
              f"({a.overheads.memory_margin_gib:g} GiB margin)")
    if name_w + 1 + len(usable) + 2 + len(SHADED) <= width:
        return [f"{usable}; {SHADED}"]
    return [usable, SHADED]


def _name_w(plan: Plan) -> int:
    return min(16, max(len(f.config) for f in plan.assumptions.figures))


def count(plan: Plan, width: int) -> int:
    """Lines `draw` makes: a bar per configuration and the legend."""
    figs = plan.assumptions.figures
    if not figs:
        return 1
    return len(figs) + len(legend(plan, _name_w(plan), width)) + len(sources(plan, width)[1])


class MemoryBars(Lines):
    """A memory bar per variant against the card's memory."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(draw, count=count, id=id)

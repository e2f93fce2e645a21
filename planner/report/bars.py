"""The schedule as bars, in plain data: what the Gantt draws, whichever library draws it.

Each bar is one run on one card. Labels are `variant·seed` for training runs, the same
with the evaluation's suite for a robustness evaluation (drawn beside the run it
evaluates), and `v<version>·part<k>` for embedding parts.
"""

from __future__ import annotations

from typing import NamedTuple

from planner.planfile.plan import ConfigFigures, Plan, Run


class Bar(NamedTuple):
    """One run on one card."""

    run: str
    card: int
    start_h: float
    end_h: float
    label: str
    group: str
    """What colours it: the variant (the version for embedding parts)."""
    kind: str
    parent: str
    """The run it evaluates (robustness evaluations), else empty."""


def label(run: Run) -> str:
    """The short name drawn on a run's bar."""
    if run.kind == "embed":
        return f"{run.variant}·part{run.shard}"
    base = f"{run.variant}·{run.seed}" if run.seed is not None else run.variant
    if run.kind == "robustness" and run.depends_on and run.id.startswith(run.depends_on):
        suite = run.id[len(run.depends_on):].strip("-").removesuffix("-eval")
        return f"{base} {suite or 'eval'}"
    return base


def bars(plan: Plan) -> list[Bar]:
    """Every scheduled run on every card it holds, in plan order."""
    return [Bar(r.id, card, r.start_h, r.end_h, label(r), r.variant, r.kind, r.depends_on)
            for r in plan.runs for card in r.card]


def groups(plan: Plan) -> list[str]:
    """Variants (or versions) in the order they first appear: the legend's order, and the
    colour each keeps in every chart."""
    seen = {f.config: None for f in plan.assumptions.figures}
    for r in plan.runs:
        seen.setdefault(r.variant, None)
    return list(seen)


def figures_of(plan: Plan) -> dict[str, ConfigFigures]:
    """Training figures by configuration."""
    return {f.config: f for f in plan.assumptions.figures}


def provenance(plan: Plan, group: str) -> list[str]:
    """Each figure a run of `group` rests on, with where it came from."""
    fig = figures_of(plan).get(group)
    if fig is not None:
        return [f"step time {fig.step_time_s.value:g} s: {_source(fig.step_time_s)}",
                f"peak memory {fig.peak_memory_gib.value:g} GiB: "
                f"{_source(fig.peak_memory_gib)}"]
    tput = plan.assumptions.throughput_tokens_per_s
    if tput is not None:
        out = [f"throughput {tput.value:,.0f} tokens/s: {_source(tput)}"]
        if plan.embedding is not None:
            out.append(f"token lengths: {plan.embedding.lengths_source}")
        return out
    return []


def _source(fig: object) -> str:
    label_of = getattr(fig, "label", None)
    text = label_of() if callable(label_of) else str(getattr(fig, "source", ""))
    span = getattr(fig, "span", None)
    rng = span() if callable(span) else ""
    return f"{text} (range {rng})" if rng else text


def hours(h: float) -> str:
    """An hour of the window for a hover: `h 70.1 (day 3, 22:05)`."""
    day, rest = divmod(h, 24)
    minutes = round(rest * 60)
    if minutes == 1440:
        day, minutes = day + 1, 0
    return f"h {h:.1f} (day {int(day) + 1}, {minutes // 60:02d}:{minutes % 60:02d})"


def markup_safe(text: str) -> str:
    """Text for plotly to draw as it is: plotly reads a few HTML tags (links among them) in
    labels and hovers, and fields in hover templates; a name from an edited plan stays text."""
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace("%{", "%&#123;"))


def plain_text(text: str) -> str:
    """Text for matplotlib to draw as it is (a `$` would start mathematics)."""
    return text.replace("$", r"\$")

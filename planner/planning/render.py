"""The headless summary: a Plan in words, for a person reading a terminal."""

from __future__ import annotations

from datetime import timedelta

import humanize

from planner.planfile.plan import Plan


def hours(h: float) -> str:
    """Hours as people read them: `33.6 h (1 day, 9 hours)`."""
    if h < 24:
        return f"{h:.1f} h"
    span = humanize.precisedelta(timedelta(hours=h), minimum_unit="hours", format="%0.0f")
    return f"{h:.1f} h ({span})"


def seconds(x: float) -> str:
    """A step time: `3.60 s`, or milliseconds / microseconds when it is short."""
    if x >= 0.1:
        return f"{x:.2f} s"
    if x >= 1e-4:
        return f"{x * 1e3:.2f} ms"
    return f"{x * 1e6:.1f} µs"


def gib(x: float) -> str:
    """A size in GiB, through humanize."""
    return humanize.naturalsize(x * 2**30, binary=True, format="%.1f")


def window(hours_: float) -> str:
    """A rental window as ordered: `7 days`, or `100 h` when not whole days."""
    days = hours_ / 24
    return f"{days:g} days" if days == int(days) else f"{hours_:g} h"


def _money(plan: Plan, x: float) -> str:
    return f"{humanize.intcomma(round(x, 2))} {plan.campaign.currency}"


def render(plan: Plan) -> str:
    """The full text summary of a plan."""
    c, s = plan.campaign, plan.summary
    lines = [
        f"{c.name} · {c.kind} campaign · plan id {c.id}",
        f"Window    {window(c.window_hours)} × {c.cards} × {c.card_name} = "
        f"{s.card_hours_bought:g} card-hours bought",
        f"Reserved  {s.reserved_hours:g} h per card: stack check "
        f"{plan.assumptions.overheads.stack_check_hours:g} h at the start, safety margin "
        f"{plan.assumptions.overheads.safety_margin_hours:g} h at the end",
        f"Usable    hours {c.usable_from_h:g}–{c.usable_until_h:g}: {hours(c.usable_hours)} "
        f"per card, {s.usable_card_hours:g} card-hours",
    ]
    lines += [f"Override  {line}" for line in plan.assumptions.overrides]
    if plan.embedding is not None:
        lines += _embedding(plan)
    else:
        lines += _training(plan)
    lines.append(
        f"Cards     utilization {s.utilization:.1%} of usable card-hours; "
        f"{s.idle_card_hours:.1f} idle card-hours; last run ends at hour {s.makespan_h:.1f}")
    if s.cost_total is not None and c.price_per_card_hour is not None:
        per = (f"; {_money(plan, s.cost_per_matrix_run)} per completed training run"
               if s.cost_per_matrix_run is not None else "")
        lines.append(f"Cost      {_money(plan, s.cost_total)} "
                     f"({_money(plan, c.price_per_card_hour)} per card-hour){per}")
    else:
        lines.append("Cost      unknown: set campaign.price_per_card_hour, or a price in "
                     "your own catalog (--catalog)")
    lines += figure_lines(plan)
    for title, items in (("Decisions", plan.decisions),
                         ("Does not fit", [f"{n.id}: {n.reason}" for n in plan.not_fitting]),
                         ("Warnings", plan.warnings)):
        if items:
            lines += ["", title]
            shown = items[:12]
            lines += [f"  - {item}" for item in shown]
            if len(items) > len(shown):
                lines.append(f"  … and {len(items) - len(shown)} more (see plan.toml)")
    return "\n".join(lines)


def fit_words(plan: Plan) -> str:
    """How many matrix runs fit, and what is known beyond: "18 of 18 runs fit (optimal)",
    "17 of 18 runs fit; no schedule fits more than 18"."""
    s = plan.summary
    text = f"{s.matrix_runs_fit} of {s.matrix_runs} runs fit"
    if s.optimal is True:
        return text + " (optimal)"
    if s.matrix_runs_fit < s.matrix_runs and s.matrix_runs_upper_bound:
        return text + f"; no schedule fits more than {s.matrix_runs_upper_bound}"
    return text


def measured_line(plan: Plan) -> str:
    """`3 of 6 configurations measured`, when the plan rests on measurements."""
    a = plan.assumptions
    if a.measurements is None:
        return ""
    total = a.configs_total or len(a.figures) or 1
    partial = " (the measurement was stopped early)" if a.measurements.partial else ""
    return f"{len(a.measured_configs)} of {total} configurations measured{partial}"


def estimate_line(plan: Plan) -> str:
    """Which end of their range derived figures were planned on, when any is derived."""
    a = plan.assumptions
    figs = [f.step_time_s for f in a.figures] + ([a.throughput_tokens_per_s]
                                                  if a.throughput_tokens_per_s else [])
    if not any(f.source in ("scaled", "analytic") for f in figs):
        return ""
    if a.estimate == "cautious":
        return ("scaled and analytic figures planned on the slow end of their range "
                "(--estimate cautious; typical plans on the calibrated value)")
    return ("scaled and analytic figures planned on the calibrated value (--estimate "
            "typical; cautious plans on the slow end of the range)")


def figure_lines(plan: Plan) -> list[str]:
    """The lines on where the figures stand: measured count and estimate end."""
    out = []
    if text := measured_line(plan):
        out.append(f"Measured  {text}")
    if text := estimate_line(plan):
        out.append(f"Estimates {text}")
    return out


def _training(plan: Plan) -> list[str]:
    s = plan.summary
    variants = len(s.table) - 1
    seeds = len(s.table[0].complete_seeds) + len(s.table[0].missing_seeds) if s.table else 0
    lines = [f"Runs      {fit_words(plan)}: baseline + {variants} "
             f"variant{'s' if variants != 1 else ''} × {seeds} seed{'s' if seeds != 1 else ''}"]
    controls = s.runs_total - s.matrix_runs
    if controls:
        done = s.runs_scheduled - s.matrix_runs_fit
        lines.append(f"          {done} of {controls} robustness evaluations fit")
    if s.first_complete_seed is not None and s.first_complete_seed_end_h is not None:
        lines.append(f"First     seed {s.first_complete_seed}'s complete set finishes at hour "
                     f"{s.first_complete_seed_end_h:.1f}")
    else:
        lines.append("First     no seed's whole matrix completes in the window")
    lines += room_lines(plan)
    lines += ["", _table(plan), ""]
    return lines


def _table(plan: Plan) -> str:
    s = plan.summary
    figs = {f.config: f for f in plan.assumptions.figures}
    seeds = sorted({x for row in s.table for x in row.complete_seeds + row.missing_seeds})
    width = max(len("variant"), *(len(r.variant) for r in s.table))
    peak_head = f"peak / {gib(plan.assumptions.memory_budget_gib)}"
    head = (f"  {'variant':<{width}}  " + " ".join(f"s{x:<3}" for x in seeds)
            + f"  {peak_head:<16}  {'step':>9}  source")
    rows = [head]
    for row in s.table:
        f = figs[row.variant]
        cells = " ".join(("✓   " if x in row.complete_seeds else "✗   ") for x in seeds)
        peak = gib(f.planned_peak_gib) + ("" if f.fits else " ✗")
        mb = f" (mb {f.micro_batch}×{f.accumulation})" if f.micro_batch != figs[
            "baseline"].micro_batch and f.fits else ""
        span = f" ({f.step_time_s.span()} s)" if f.step_time_s.span() else ""
        rows.append(f"  {row.variant:<{width}}  {cells}  {peak:<16}  "
                    f"{seconds(f.step_time_s.value):>9}  {f.step_time_s.label()}{span}{mb}")
    return "\n".join(rows)


def _embedding(plan: Plan) -> list[str]:
    e = plan.embedding
    assert e is not None
    lines = [
        f"Corpus    {humanize.intcomma(e.documents)} documents ({e.lengths_source} lengths); "
        f"model {e.model}, truncation {e.truncation_tokens}, {e.pooling} pooling, "
        f"{e.normalization} normalization",
        "",
        "  strategy         batches      useful tokens   padded tokens   padding   h/version",
    ]
    for b in e.strategies:
        mark = "*" if b.strategy == e.batching else " "
        lines.append(f" {mark}{b.strategy:<15} {b.batches:>9,}  {b.useful_tokens:>15,}  "
                     f"{b.padded_tokens:>14,}  {b.padding_fraction:>7.1%}  "
                     f"{b.hours_per_version:>9.1f}")
    lines += [
        "",
        f"Versions  {e.versions_fit} of {e.versions_wanted} representation versions fit; "
        f"{humanize.intcomma(e.documents_fit_first_version)} documents of the first",
        *room_lines(plan),
    ]
    if e.corpus is not None:
        lines.append(f"Shards    {e.corpus.shards:,} per version, ≤ {e.shard_documents:,} "
                     f"documents each, listed in {e.corpus.shard_list} (from {e.corpus.path})")
    elif e.shards:
        lines.append(f"Shards    about {e.shards:,} per version, ≤ {e.shard_documents:,} "
                     "documents each: plan with --corpus to write the shard list")
    return lines


def _n(n: int, word: str, many: str = "") -> str:
    return f"{humanize.intcomma(n)} {word if n == 1 else many or word + 's'}"


def room_lines(plan: Plan) -> list[str]:
    """What the window holds beyond the preset: `Room      up to 9 complete seed sets (3
    asked; proven)`, and the extra variants or the documents of one version."""
    cap = plan.summary.capacity
    if cap is None:
        return []
    if cap.versions is not None:
        return [f"Room      up to {_n(cap.versions, 'representation version')} "
                f"({cap.versions_asked} asked)",
                f"          one version covers up to {_n(cap.documents or 0, 'document')} "
                f"of this corpus's lengths ({_n(cap.batches or 0, 'batch', 'batches')})"]
    if cap.seed_sets is None or cap.seed_sets_asked is None:
        return []
    sets, asked = cap.seed_sets, cap.seed_sets_asked
    proof = ("proven" if cap.seed_sets_proven
             else f"no schedule fits more than {cap.seed_sets_upper_bound}")
    if sets < asked:
        head = ("no complete seed set fits" if sets == 0
                else f"{_n(sets, 'complete seed set')} fit")
        return [f"Room      {head}: below the {asked} asked ({proof})"]
    lead = "up to" if cap.seed_sets_proven else "at least"
    lines = [f"Room      {lead} {_n(sets, 'complete seed set')} ({asked} asked; {proof})"]
    if cap.extra_variants:
        lines.append(f"          or {_n(cap.extra_variants, 'more variant')} on the "
                     f"{_n(asked, 'asked seed')}, each as costly as the median variant")
    return lines

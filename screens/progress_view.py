"""What the Progress screen draws, as plain text: the cards' timeline with done, running
and planned runs, a now line, the projected end against the window's end, and the
observed step times. No Textual here, so it is tested and reused as text."""

from __future__ import annotations

import time
from dataclasses import dataclass

from planner.planning.plan import Plan
from planner.run.journal import History, Workspace
from planner.run.observe import Rate, rates, with_done_records
from planner.run.replan import replan
from planner.run.slurm_trace import with_traces
from planner.run.status import current, groups_of

DONE, RUNNING, PLANNED, NOW = "█", "▓", "░", "│"


@dataclass(frozen=True)
class Bar:
    """One run on the timeline."""

    slot: int
    start_h: float
    end_h: float
    state: str
    """done, running or planned."""


@dataclass(frozen=True)
class View:
    """Everything the screen shows."""

    campaign: str
    now_h: float
    usable_until_h: float
    projected_end_h: float
    cards: int
    bars: list[Bar]
    observed: dict[str, Rate]
    counts: dict[str, int]
    late: list[str]
    """Runs the rest of the window no longer holds at the observed step times."""


def view(plan: Plan, hist: History, ws: Workspace, now: float | None = None) -> View:
    """The view of `plan` against its journal at POSIX time `now`: what ran, and what is
    left placed as a replan now would place it (on the cards running runs hold, after
    them)."""
    now = time.time() if now is None else now
    hist = with_traces(plan, hist, ws.workdir, until=now)  # SLURM tasks keep no journal
    recs = with_done_records(plan.runs, current(plan, hist), ws.workdir)
    groups = groups_of(plan.runs, recs)
    counts = {k: list(groups.values()).count(k) for k in ("done", "running", "pending",
                                                          "failed")}
    c = plan.campaign
    n = len(hist.cards) or c.cards
    origin = hist.window_start
    if origin is None or hist.plan is None:  # not started: the plan as planned
        bars = [Bar(s, r.start_h, r.end_h, "planned") for r in plan.runs for s in r.card]
        return View(c.id, c.usable_from_h, c.usable_until_h, plan.summary.makespan_h, n,
                    bars, rates(plan, recs), counts, [])
    r = replan(plan, hist, ws, now)
    bars = []
    for run in r.plan.runs:
        rec = recs.get(run.id)
        if run.id in r.finished and rec is not None and rec.started and rec.ended:
            real = hist.cards or list(range(n))
            slots = [real.index(x) for x in rec.cards if x in real] or list(run.card)
            bars += [Bar(s, (rec.started - origin) / 3600, (rec.ended - origin) / 3600,
                         "done") for s in slots]
        elif run.id in r.running:
            bars += [Bar(s, run.start_h, run.end_h, "running") for s in run.card]
        elif run.id in r.remaining or run.id in r.added:
            bars += [Bar(s, run.start_h, run.end_h, "planned") for s in run.card]
    return View(c.id, r.now_h, c.usable_until_h, r.projected_end_h, n, bars, r.observed,
                counts, [d.id for d in r.dropped])


def timeline(v: View, width: int) -> list[str]:
    """One line per card (at most 12, then a count), `width` characters of time each from
    hour 0 to the later of the window's end and the projected end."""
    label = 8
    cols = max(width - label - 1, 10)
    span = max(v.usable_until_h, v.projected_end_h, v.now_h, 1e-9)

    def col(h: float) -> int:
        return min(max(int(h / span * cols), 0), cols - 1)

    rows = [[" "] * cols for _ in range(min(v.cards, 12))]
    rank = {"planned": 0, "running": 1, "done": 2}
    owner = [[-1] * cols for _ in rows]
    for b in v.bars:
        if b.slot >= len(rows):
            continue
        for x in range(col(b.start_h), max(col(b.end_h), col(b.start_h) + 1)):
            if rank[b.state] >= owner[b.slot][x]:
                owner[b.slot][x] = rank[b.state]
                rows[b.slot][x] = {"done": DONE, "running": RUNNING, "planned": PLANNED}[b.state]
    end = col(v.usable_until_h)
    out = []
    for i, row in enumerate(rows):
        cells = list(row)
        cells[col(v.now_h)] = NOW
        if end != col(v.now_h) and cells[end] == " ":
            cells[end] = "┆"
        out.append(f"card {i:<3}{''.join(cells)}")
    if v.cards > len(rows):
        out.append(f"… and {v.cards - len(rows)} more cards")
    return out


def headline(v: View) -> list[str]:
    """The campaign, the clock and the projected end against the window's end."""
    behind = v.projected_end_h - v.usable_until_h
    verdict = ("ends inside the window" if behind <= 1e-6 else
               f"{behind:.3g} h past the window's end")
    c = v.counts
    return [f"{v.campaign}: {c['done']} done · {c['running']} running · {c['pending']} "
            f"pending · {c['failed']} failed",
            f"Now hour {v.now_h:.3g} · projected end hour {v.projected_end_h:.3g} · runs must "
            f"end by hour {v.usable_until_h:.3g}: {verdict}"]


def rate_lines(v: View) -> list[str]:
    """Observed step time per variant."""
    return [f"{name:<14} {r.seconds_per_step:.3g} s/step · {r.ratio:.2f}× planned "
            f"({r.source}{f', {r.runs} run(s)' if r.runs else ''})"
            for name, r in v.observed.items()]

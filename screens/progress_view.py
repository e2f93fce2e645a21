"""What the Progress screen draws, as plain text: the cards' timeline with done, running
and planned runs (labelled where a bar is wide enough), a now line, the projected end
against the window's end, and the observed step times: the figures `status` and `replan`
show (`planner.run.live`). The screen follows the plan that runs: when `run` switched to a
revision, the journal says so, and `following` gives that plan. No Textual here, so it is
tested and reused as text."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from planner.errors import InputError
from planner.planfile.plan import Plan
from planner.run.journal import History, Workspace
from planner.run.live import live
from planner.run.observe import Rate
from planner.run.params import plan_fingerprint
from planner.run.prepare import load_plan
from planner.run.replan import replan
from planner.run.status import groups_of

DONE, RUNNING, PLANNED, NOW = "█", "▓", "░", "│"


@dataclass(frozen=True)
class Bar:
    """One run on the timeline."""

    slot: int
    start_h: float
    end_h: float
    state: str
    """done, running or planned."""
    label: str = ""
    """The run's name without the campaign's, written on the bar where it fits."""


@dataclass(frozen=True)
class Follow:
    """The plan the screen shows: the one it was opened on, or the revision `run` switched
    to since."""

    plan: Plan
    path: Path
    note: str
    """What the screen says about it ("" for the plan it was opened on)."""


def following(plan: Plan, path: Path, hist: History, ws: Workspace) -> Follow:
    """The plan the journal runs now, when it is a later revision of `plan`'s campaign
    that can be read (its fingerprint checked against the journal's); else `plan`, with a
    note when the journal runs another plan that cannot be shown."""
    ran = hist.plan
    if ran is None or not ran.get("fingerprint") or \
            ran.get("fingerprint") == plan_fingerprint(plan):
        return Follow(plan, path, "")
    revision = ran.get("revision")
    if ran.get("campaign") != plan.campaign.id or not isinstance(revision, int) \
            or isinstance(revision, bool) or revision <= plan.revision:
        return Follow(plan, path, "")
    where = Path(str(ran.get("path") or ""))
    where = where if where.is_absolute() else ws.workdir / where
    try:
        newer, newer_path = load_plan(str(where))
    except InputError as exc:
        return Follow(plan, path, f"`run` switched to revision {revision}, which cannot be "
                                  f"read here: {str(exc)[:120]}")
    if plan_fingerprint(newer) != ran["fingerprint"]:
        return Follow(plan, path, f"`run` switched to revision {revision}; {newer_path} is "
                                  "no longer the plan it runs")
    try:
        shown = newer_path.relative_to(ws.workdir)
    except ValueError:
        shown = newer_path
    return Follow(newer, newer_path,
                  f"Following revision {revision} ({shown}): `run` switched to it")


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
    figures = live(plan, hist, ws, now)  # SLURM tasks keep no journal: their traces count
    hist, recs = figures.hist, figures.recs
    groups = groups_of(plan.runs, recs)
    counts = {k: list(groups.values()).count(k) for k in ("done", "running", "pending",
                                                          "failed")}
    c = plan.campaign
    n = len(hist.cards) or c.cards
    origin = hist.window_start
    prefix = f"{c.id}-"

    def name(rid: str) -> str:
        return rid[len(prefix):] if rid.startswith(prefix) else rid

    if origin is None or hist.plan is None:  # not started: the plan as planned
        bars = [Bar(s, r.start_h, r.end_h, "planned", name(r.id)) for r in plan.runs
                for s in r.card]
        return View(c.id, c.usable_from_h, c.usable_until_h, plan.summary.makespan_h, n,
                    bars, figures.observed, counts, [])
    r = replan(plan, hist, ws, now)
    bars = []
    for run in r.plan.runs:
        rec = recs.get(run.id)
        if run.id in r.finished and rec is not None and rec.started and rec.ended:
            real = hist.cards or list(range(n))
            slots = [real.index(x) for x in rec.cards if x in real] or list(run.card)
            bars += [Bar(s, (rec.started - origin) / 3600, (rec.ended - origin) / 3600,
                         "done", name(run.id)) for s in slots]
        elif run.id in r.running:
            bars += [Bar(s, run.start_h, run.end_h, "running", name(run.id)) for s in run.card]
        elif run.id in r.remaining or run.id in r.added:
            bars += [Bar(s, run.start_h, run.end_h, "planned", name(run.id)) for s in run.card]
    # Nothing left to run: the campaign ended when its last run did, not now.
    end = r.projected_end_h if r.running or r.remaining or r.added else \
        max((b.end_h for b in bars if b.state == "done"), default=r.now_h)
    return View(c.id, r.now_h, c.usable_until_h, end, n, bars, r.observed, counts,
                [d.id for d in r.dropped])


def timeline(v: View, width: int) -> list[str]:
    """One line per card (at most 12, then a count), `width` characters of time each from
    hour 0 to the later of the window's end and the projected end. A bar wide enough for
    its run's name (and a mark at each end) carries it."""
    label = 8
    cols = max(width - label - 1, 10)
    span = max(v.usable_until_h, v.projected_end_h, v.now_h, 1e-9)

    def col(h: float) -> int:
        return min(max(int(h / span * cols), 0), cols - 1)

    rows = [[" "] * cols for _ in range(min(v.cards, 12))]
    rank = {"planned": 0, "running": 1, "done": 2}
    owner = [[-1] * cols for _ in rows]
    shown = [[-1] * cols for _ in rows]
    for i, b in enumerate(v.bars):
        if b.slot >= len(rows):
            continue
        for x in range(col(b.start_h), max(col(b.end_h), col(b.start_h) + 1)):
            if rank[b.state] >= owner[b.slot][x]:
                owner[b.slot][x] = rank[b.state]
                shown[b.slot][x] = i
                rows[b.slot][x] = {"done": DONE, "running": RUNNING, "planned": PLANNED}[b.state]
    end = col(v.usable_until_h)
    marks = {col(v.now_h), end}
    for i, b in enumerate(v.bars):
        if b.slot >= len(rows) or not b.label:
            continue
        mine = [x for x in range(cols) if shown[b.slot][x] == i]
        if not mine or mine[-1] - mine[0] != len(mine) - 1:
            continue  # hidden, or cut in two by a bar drawn over it
        # Inside the bar, a mark of its state at each end, clear of the now line and the
        # window's end.
        for first in range(mine[0] + 1, mine[-1] - len(b.label) + 1):
            if not marks & set(range(first - 1, first + len(b.label) + 1)):
                rows[b.slot][first:first + len(b.label)] = list(b.label)
                break
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
    # Runs left out end nowhere: the projected end is of the runs that still fit.
    verdict = (f"{len(v.late)} run(s) no longer fit" if v.late else
               "ends inside the window" if behind <= 1e-6 else
               f"{behind:.3g} h past the window's end")
    c = v.counts
    return [f"{v.campaign}: {c['done']} done · {c['running']} running · {c['pending']} "
            f"pending · {c['failed']} failed",
            f"Now hour {v.now_h:.3g} · projected end hour {v.projected_end_h:.3g} · runs must "
            f"end by hour {v.usable_until_h:.3g}: {verdict}"]


def rate_lines(v: View) -> list[str]:
    """Observed step time per variant (the words `replan` uses)."""
    return [f"{name:<14} {r.words()}" for name, r in v.observed.items()]

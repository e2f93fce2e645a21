"""A new revision of a running plan: what happened, re-timed from observed step times, and
what is left packed into the rest of the window (`planner.planning.replan`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from planner.errors import InputError
from planner.planfile.plan import NotFitting, Plan, Run, TableRow, plan_id
from planner.planning.replan import Left, pack_rest
from planner.run.clock import capacity_left
from planner.run.journal import History, RunRecord, Workspace
from planner.run.live import live
from planner.run.observe import Rate, remaining_h, resumed_h, startup_s
from planner.run.procs import alive
from planner.run.resume import Resume, resume_from


@dataclass
class Replan:
    """A revision and how it differs from the plan it replaces."""

    plan: Plan
    now_h: float
    finished: list[str] = field(default_factory=list)
    running: list[str] = field(default_factory=list)
    remaining: list[str] = field(default_factory=list)
    dropped: list[NotFitting] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    observed: dict[str, Rate] = field(default_factory=dict)
    projected_end_h: float = 0.0
    resuming: dict[str, Resume] = field(default_factory=dict)
    """Interrupted runs re-timed from the step their checkpoint holds."""
    room_left: dict[str, Any] = field(default_factory=dict)
    """Card-hours the window holds beyond the revision, and how many more seed sets that
    is by card-hours alone (`planner.run.clock.capacity_left`)."""

    def as_json(self) -> dict[str, Any]:
        """What `replan --json` prints."""
        return {"revision": self.plan.revision, "parent": self.plan.parent,
                "now_h": round(self.now_h, 6), "finished": self.finished,
                "running": self.running, "remaining": self.remaining,
                "dropped": [d.model_dump() for d in self.dropped], "added": self.added,
                "observed": {k: v.as_json() for k, v in self.observed.items()},
                "projected_end_h": round(self.projected_end_h, 6),
                "resuming": {k: {"from_step": r.step, "recorded": r.recorded, "how": r.how}
                             for k, r in self.resuming.items()},
                "room_left": self.room_left}


def check_journal(plan: Plan, hist: History, ws: Workspace) -> float:
    """The window's start (POSIX time), once the journal is this campaign's."""
    if hist.plan is None or hist.window_start is None:
        raise InputError("no run session in this journal yet, and no SLURM task has "
                         "started a run: nothing to replan from", file=ws.journal)
    theirs = hist.plan.get("campaign")
    if theirs != plan.campaign.id:
        raise InputError(f"the journal is campaign {str(theirs)[:80]!r}'s, not "
                         f"{plan.campaign.id!r}'s", file=ws.journal)
    return hist.window_start


def _slots(rec: RunRecord, hist: History, n: int) -> list[int]:
    """The card slots (plan indices) a running run holds."""
    real = hist.cards or list(range(n))
    return [real.index(c) if c in real else c % n for c in rec.cards] or [0]


def replan(plan: Plan, hist: History, ws: Workspace, now: float) -> Replan:
    """The revision of `plan` at POSIX time `now`."""
    figures = live(plan, hist, ws, now)  # the same figures as `status` and the screen
    hist, recs, observed = figures.hist, figures.recs, figures.observed
    origin = check_journal(plan, hist, ws)
    now_h = (now - origin) / 3600
    if now_h < 0:
        raise InputError(f"is {-now_h:.3f} h before the window's start", field="--at")
    startup = startup_s(plan)
    c = plan.campaign
    n = len(hist.cards) or c.cards
    horizon = c.usable_until_h - max(now_h, c.usable_from_h)
    start_at = max(now_h, c.usable_from_h)
    out = Replan(plan, now_h, observed=observed)
    kept: list[Run] = []
    running: list[Run] = []
    busy = [0.0] * n
    candidates: list[Run] = []
    for run in [*plan.runs, *plan.held]:
        rec = recs[run.id]
        if rec.state == "finished":
            out.finished.append(run.id)
            kept.append(run)
        elif rec.state == "failed":
            kept.append(run)  # no tries left: the executor leaves it as it is
        elif rec.state == "running" and alive(rec.process):
            left = remaining_h(run, rec, now, observed.get(run.variant), startup)
            slots = _slots(rec, hist, n)
            for s in slots:
                busy[s] = max(busy[s], left)
            began = (rec.started - origin) / 3600 if rec.started else now_h
            running.append(run.model_copy(update={
                "card": slots, "start_h": min(max(began, 0.0), now_h),
                "end_h": now_h + left}))
            out.running.append(run.id)
        else:
            candidates.append(run)
    held_ids = {r.id for r in plan.held}
    index = {r.id: i for i, r in enumerate(candidates)}
    ends = {r.id: r.end_h - now_h for r in running}
    left_runs = []
    for r in candidates:
        parent = r.depends_on
        rec = recs[r.id]
        # An interrupted run resumes from its checkpoint: only the steps after it are left.
        resume = resume_from(r, rec, ws.workdir)
        if resume.step:
            out.resuming[r.id] = resume
        left_runs.append(Left(
            resumed_h(r, observed.get(r.variant), resume.step), len(r.card),
            r.seed if r.kind == "train" and r.seed is not None else -1,
            index.get(parent, -1), ends.get(parent, 0.0)))
    blocked = {r.id for r in candidates
               if r.depends_on and r.depends_on not in index and r.depends_on not in ends
               and recs.get(r.depends_on, RunRecord("")).state != "finished"}
    placed = pack_rest(left_runs, busy, max(horizon, 0.0))
    fresh: list[tuple[float, int, Run]] = []
    dropped: list[Run] = []
    still_held: list[Run] = []
    for i, (r, p) in enumerate(zip(candidates, placed, strict=True)):
        if (p is None or r.id in blocked) and r.id in held_ids:
            still_held.append(r)  # left out before, and still: its reason stands
        elif p is None or r.id in blocked:
            dropped.append(r)
            out.dropped.append(NotFitting(id=r.id, reason=_why(r, recs, observed, c.usable_until_h,
                                                              r.id in blocked)))
        if p is None or r.id in blocked:
            continue
        fresh.append((p.start, i, r.model_copy(update={
            "card": list(p.cards), "start_h": start_at + p.start, "end_h": start_at + p.end})))
        (out.added if r.id in held_ids else out.remaining).append(r.id)
    fresh.sort(key=lambda t: (t[0], t[1]))
    runs = kept + running + [r for _, _, r in fresh]
    out.projected_end_h = max((r.end_h for r in running + [r for _, _, r in fresh]),
                              default=now_h)
    placed_ids = {r.id for r in runs}
    not_fitting = [nf for nf in plan.not_fitting
                   if nf.id not in placed_ids and nf.id not in {d.id for d in out.dropped}]
    out.plan = plan.model_copy(update={
        "runs": runs, "held": [*dropped, *still_held],
        "not_fitting": [*not_fitting, *out.dropped],
        "revision": plan.revision + 1, "parent": plan_id(plan),
        "decisions": [*plan.decisions, _decision(out, observed)],
        "summary": _summary(plan, runs, placed_ids)})
    hours = {r.id: r.end_h - max(r.start_h, now_h) for r in running + [r for _, _, r in fresh]}
    out.room_left = capacity_left(out.plan, hours, n, now_h, observed)
    return out


def _why(run: Run, recs: dict[str, RunRecord], observed: dict[str, Rate], until: float,
         blocked: bool) -> str:
    if blocked or (run.depends_on and run.depends_on in recs
                   and recs[run.depends_on].state == "failed"):
        return f"it evaluates {run.depends_on}, which failed"
    rate = observed.get(run.variant)
    pace = "" if rate is None else f" at {rate.words()}" if rate.seen else \
        f" at its planned step time (step time {rate.source})"
    return f"no longer ends by hour {until:g} of the usable window{pace}"


def _decision(out: Replan, observed: dict[str, Rate]) -> str:
    paces = ", ".join(f"{k} {v.ratio:.2f}× ({v.source})" if v.seen else f"{k} {v.source}"
                      for k, v in observed.items())
    return (f"revision {out.plan.revision + 1} at hour {out.now_h:.3f}: {len(out.finished)} "
            f"finished, {len(out.running)} running, {len(out.remaining)} re-timed, "
            f"{len(out.dropped)} dropped, {len(out.added)} added; step times {paces}")


def _summary(plan: Plan, runs: list[Run], placed: set[str]) -> Any:
    s = plan.summary
    seeds_of = {(r.variant, r.seed): r.id for r in [*plan.runs, *plan.held] if r.kind == "train"}
    table = []
    for row in s.table:
        every = sorted({*row.complete_seeds, *row.missing_seeds})
        done = [x for x in every if seeds_of.get((row.variant, x)) in placed]
        table.append(TableRow(variant=row.variant, complete_seeds=done,
                              missing_seeds=[x for x in every if x not in done]))
    busy = sum((r.end_h - r.start_h) * len(r.card) for r in runs)
    usable = s.usable_card_hours
    return s.model_copy(update={
        "runs_scheduled": len(runs), "table": table,
        "matrix_runs_fit": sum(1 for r in runs if r.kind == "train"),
        "busy_card_hours": round(busy, 4), "idle_card_hours": round(usable - busy, 4),
        "utilization": round(busy / usable, 4) if usable else 0.0,
        "makespan_h": max((r.end_h for r in runs), default=0.0)})

"""Observed step times: each variant's seconds per step from the progress its runs report.

A run's attempts are read from its journal trace. An attempt's step time is the time
between its first and last timed `progress` samples (those not marked `warmup`) over the
steps between them: between two reported steps, so a process's start-up, warm-up and
first step never count. Until an attempt has two such samples it shows nothing. An attempt
of a run that reports no progress at all shows its start (plus the planned start-up) to
its finish. A variant's rate sums its runs'; a variant nothing was seen of takes the
campaign's observed/planned ratio, and says so, and while nothing at all was seen every
variant is `not yet observed` (its planned step time stands in, and is labelled so).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from planner.nofollow import LinkRefused
from planner.planfile.plan import Plan, Run
from planner.run.journal import RunRecord
from planner.run.once import folders_present, read_done
from planner.run.params import run_fingerprint

OBSERVED, CAMPAIGN, PLANNED = "observed", "campaign ratio", "not yet observed"
AT_SLACK_S = 3600.0
"""A sample's `at` (when the run wrote it) further than this before its journal time is
not believed: the journal's own time stands."""


@dataclass(frozen=True)
class Rate:
    """A variant's step time as observed, against the plan's."""

    seconds_per_step: float
    planned_seconds_per_step: float
    ratio: float
    """Observed ÷ planned step time."""
    runs: int
    """Runs of the variant whose progress or exits gave it (0: not observed)."""
    source: str
    """`observed`, `campaign ratio` (the campaign's observed/planned ratio) or `planned`."""

    @property
    def seen(self) -> bool:
        """Whether any step time was observed (this variant's, or the campaign's ratio)."""
        return self.source != PLANNED

    def as_json(self) -> dict[str, Any]:
        """The rate as `--json` prints it; null figures while nothing was observed."""
        return {"seconds_per_step": round(self.seconds_per_step, 6) if self.seen else None,
                "planned_seconds_per_step": round(self.planned_seconds_per_step, 6),
                "ratio": round(self.ratio, 4) if self.seen else None, "runs": self.runs,
                "source": self.source}

    def words(self) -> str:
        """`0.62 s/step, 2.07× planned (observed, 1 run(s))`, or `not yet observed`."""
        if not self.seen:
            return (f"not yet observed (planned {self.planned_seconds_per_step:.3g} s/step "
                    "assumed)")
        runs = f", {self.runs} run(s)" if self.runs else ""
        return (f"{self.seconds_per_step:.3g} s/step, {self.ratio:.2f}× planned "
                f"({self.source}{runs})")


def planned_step_s(plan: Plan) -> dict[str, float]:
    """Planned seconds per step of each configuration."""
    return {f.config: f.step_time_s.value for f in plan.assumptions.figures}


def startup_s(plan: Plan) -> float:
    """Seconds each run is planned to spend before its first step."""
    return plan.assumptions.overheads.startup_minutes * 60


def sample_time(e: dict[str, Any]) -> float:
    """When a `progress` sample's step was reported: the file's time the executor saw, or
    the journal's time of the sample."""
    at, t = e.get("at"), e["t"]
    if isinstance(at, int | float) and not isinstance(at, bool) and \
            t - AT_SLACK_S <= at <= t + 1.0:
        return float(at)
    return float(t)


def observed_span(run: Run, rec: RunRecord, startup: float, until: float | None = None
                  ) -> tuple[float, int]:
    """(seconds, steps) the run's attempts show; `until` ends a running attempt's span."""
    total_t, total_steps = 0.0, 0
    samples: list[tuple[float, int]] = []
    reported = False
    """Whether the attempt reported any step (warm-up too)."""
    begin: float | None = None
    """A fresh attempt's start plus the planned start-up (for a run that reports nothing)."""

    def close(finish: float | None) -> None:
        nonlocal total_t, total_steps
        points = samples
        if not reported and begin is not None and finish is not None:
            points = [(begin, 0), (finish, run.steps)]
        if len(points) >= 2 and points[-1][1] > points[0][1]:
            total_t += max(points[-1][0] - points[0][0], 0.0)
            total_steps += points[-1][1] - points[0][1]

    for e in rec.trace:
        ev = e["ev"]
        if ev == "started":
            close(None)
            samples, reported = [], False
            begin = None if e.get("resume") else e["t"] + startup
        elif ev == "progress" and (until is None or e["t"] <= until):
            reported = True
            if not e.get("warmup"):
                samples.append((sample_time(e), e["step"]))
        elif ev == "exited":
            close(e["t"] if e["outcome"] == "finished" and run.steps else None)
            samples, reported, begin = [], False, None
    close(None)
    return total_t, total_steps


def distinct(recs: dict[str, RunRecord]) -> list[RunRecord]:
    """Each record once: the runs of a plan before it starts share one pending record."""
    return list({id(rec): rec for rec in recs.values()}.values())


def rates(plan: Plan, recs: dict[str, RunRecord]) -> dict[str, Rate]:
    """Each configuration's observed step time, or the campaign's ratio where none shows."""
    planned = planned_step_s(plan)
    startup = startup_s(plan)
    seen: dict[str, list[float]] = {}
    # Before anything ran no record has a trace: no run to look at.
    traced = [*plan.runs, *plan.held] if any(rec.trace for rec in distinct(recs)) else []
    for run in traced:
        rec = recs.get(run.id)
        if run.kind != "train" or rec is None or not rec.trace or run.variant not in planned:
            continue
        t, steps = observed_span(run, rec, startup)
        if steps:
            acc = seen.setdefault(run.variant, [0.0, 0.0, 0.0])
            acc[0] += t
            acc[1] += steps
            acc[2] += 1
    spent = sum(a[0] for a in seen.values())
    expected = sum(a[1] * planned[v] for v, a in seen.items())
    ratio = spent / expected if expected > 0 else 1.0
    out = {}
    for config, step_s in planned.items():
        if config in seen and seen[config][1] and step_s > 0:
            secs, count, n = seen[config]
            obs = secs / count
            out[config] = Rate(obs, step_s, obs / step_s, int(n), OBSERVED)
        else:
            out[config] = Rate(step_s * ratio, step_s, ratio, 0,
                               CAMPAIGN if expected > 0 else PLANNED)
    return out


def retimed_h(run: Run, rate: Rate | None) -> float:
    """The run's planned hours with its steps at the observed step time."""
    planned = run.end_h - run.start_h
    if rate is None or not run.steps:
        return planned
    extra = run.steps * (rate.seconds_per_step - rate.planned_seconds_per_step) / 3600
    return max(planned + extra, 0.0)


def resumed_h(run: Run, rate: Rate | None, from_step: int) -> float:
    """Hours a run resuming from `from_step` needs: its whole re-timed duration (startup
    included) less the steps its checkpoint already holds."""
    full = retimed_h(run, rate)
    if rate is None or from_step <= 0:
        return full
    return max(full - from_step * rate.seconds_per_step / 3600, 0.0)


def current_step(run: Run, rec: RunRecord, now: float, rate: Rate | None,
                 startup: float) -> tuple[int, str]:
    """(step, how it is known) of a running run: `reported` from its progress file, else
    `elapsed`, estimated from the time since its attempt started."""
    attempt = [e for e in rec.trace if e.get("attempt") == rec.attempts]
    reported = [e["step"] for e in attempt if e["ev"] == "progress" and e["t"] <= now]
    if reported:
        return min(reported[-1], run.steps), "reported"
    started = rec.started or now
    step_s = rate.seconds_per_step if rate and rate.seconds_per_step > 0 else 0.0
    if not step_s or not run.steps:
        return 0, "elapsed"
    return min(int(max(now - started - startup, 0.0) / step_s), run.steps), "elapsed"


def remaining_h(run: Run, rec: RunRecord, now: float, rate: Rate | None,
                startup: float) -> float:
    """Hours a running run still needs at the observed step time."""
    full = retimed_h(run, rate)
    if not run.steps or rate is None:
        spent = (now - (rec.started or now)) / 3600
        return max(full - spent, 0.0)
    step, _ = current_step(run, rec, now, rate, startup)
    return max((run.steps - step) * rate.seconds_per_step / 3600, 0.0)


def with_done_records(runs: list[Run], recs: dict[str, RunRecord], workdir: Path,
                      present: set[str] | None = None) -> dict[str, RunRecord]:
    """`recs` with the runs a SLURM task (or an executor in another folder) finished marked
    finished: their done record beside their checkpoints says so, with these parameters,
    though this journal does not. `present`: the runs' folders found, when the caller has
    looked already (`folders_present`)."""
    out = dict(recs)
    if present is None:  # a record lives in its run's folder
        present = folders_present(workdir, runs)
    for run in runs if present else ():
        rec = out.get(run.id)
        if (rec is not None and rec.state == "finished") or run.checkpoint_dir not in present:
            continue
        try:
            done = read_done(workdir, run, functools.partial(run_fingerprint, run))
        except LinkRefused:
            done = None
        finished = done.get("finished") if done else None
        if not isinstance(finished, int | float) or isinstance(finished, bool):
            continue
        base = rec or RunRecord(run.id)
        out[run.id] = replace(base, state="finished", fingerprint=run_fingerprint(run),
                              ended=float(finished), exit_code=0,
                              attempts=max(base.attempts, 1))
    return out

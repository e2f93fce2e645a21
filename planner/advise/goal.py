"""What an order must achieve for `advise`: the goal, whether a plan meets it, and what a
plan that falls short would need.

Goals:
- `all`: every run of the campaign — the whole matrix and its robustness evaluations, or
  every representation version of an embedding campaign;
- `seeds:K`: K complete seed sets (a seed whose every configuration completes), beyond the
  preset's seeds too (`goal_preset` extends the list);
- `runs:N`: N training runs of the matrix;
- `versions:K`: K complete representation versions (embedding campaigns).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Literal

from planner.errors import InputError
from planner.packing.capacity import more_seeds
from planner.planfile.plan import Plan
from planner.spec.matrix import run_hours
from planner.spec.preset import Preset, Training
from planner.spec.training import MAX_SEEDS

GoalKind = Literal["all", "seeds", "runs", "versions"]


@dataclass(frozen=True)
class Goal:
    """What an order must fit."""

    kind: GoalKind
    count: int = 0

    def text(self) -> str:
        """The goal as typed: `all`, `seeds:2`, …"""
        return self.kind if self.kind == "all" else f"{self.kind}:{self.count}"


def parse_goal(text: str, field: str = "--goal") -> Goal:
    """`all`, `seeds:K`, `runs:N` or `versions:K`; an InputError naming `field` otherwise."""
    t = text.strip().lower()
    if t == "all":
        return Goal("all")
    kind, sep, number = t.partition(":")
    if not sep or kind not in ("seeds", "runs", "versions"):
        raise InputError(f"not a goal: {text.strip()!r}; give all, seeds:K, runs:N or "
                         "versions:K", field=field)
    try:
        count = int(number)
    except ValueError:
        raise InputError(f"{kind}:K needs a whole number, not {number!r}", field=field) from None
    if count < 1:
        raise InputError(f"{kind}:{count}: the count must be at least 1", field=field)
    return Goal(kind, count)  # type: ignore[arg-type]


def check_goal(goal: Goal, preset: Preset, field: str = "--goal") -> None:
    """Refuse a goal the campaign can never meet, whatever the order."""
    training = preset.training
    if goal.kind == "versions":
        if preset.embedding is None:
            raise InputError("versions:K is for embedding campaigns; this one trains: give "
                             "all, seeds:K or runs:N", field=field)
        if goal.count > preset.embedding.versions:
            raise InputError(f"the campaign asks for {preset.embedding.versions} versions, "
                             f"not {goal.count}", field=field)
    elif goal.kind in ("seeds", "runs"):
        if training is None:
            raise InputError(f"{goal.kind}:K is for training campaigns; this one embeds: give "
                             "all or versions:K", field=field)
        seeds = len(training.seeds)
        if goal.kind == "seeds" and goal.count > MAX_SEEDS:
            raise InputError(f"seeds:{goal.count}: a campaign lists at most {MAX_SEEDS} seeds",
                             field=field)
        matrix = seeds * (1 + len(training.variants))
        if goal.kind == "runs" and goal.count > matrix:
            raise InputError(f"the matrix has {matrix} training runs, not {goal.count}",
                             field=field)


def goal_preset(goal: Goal, preset: Preset) -> Preset:
    """The campaign the goal is planned on: `seeds:K` beyond the preset's seeds extends its
    seed list (ids continuing it, `planner.packing.capacity.more_seeds`); any other goal
    plans the preset as it is."""
    training = preset.training
    if goal.kind != "seeds" or training is None or goal.count <= len(training.seeds):
        return preset
    seeds = more_seeds(training.seeds, goal.count)
    return preset.model_copy(update={preset.campaign.kind: training.model_copy(
        update={"seeds": seeds})})


def complete_seeds(plan: Plan) -> list[int]:
    """Seeds whose whole matrix completes, from the plan's variant × seed table."""
    table = plan.summary.table
    if not table:
        return []
    done = set(table[0].complete_seeds)
    for row in table[1:]:
        done &= set(row.complete_seeds)
    return sorted(done)


def versions_fit(plan: Plan) -> int:
    """Complete representation versions (0 for training plans)."""
    return plan.embedding.versions_fit if plan.embedding else 0


def meets(goal: Goal, plan: Plan) -> bool:
    """Whether `plan` achieves `goal`."""
    s = plan.summary
    if goal.kind == "all":
        return s.runs_scheduled == s.runs_total
    if goal.kind == "seeds":
        return len(complete_seeds(plan)) >= goal.count
    if goal.kind == "runs":
        return s.matrix_runs_fit >= goal.count
    return versions_fit(plan) >= goal.count


def needs(goal: Goal, preset: Preset, plan: Plan) -> list[str]:
    """What `plan` lacks to meet `goal`, in words: the runs missing and the card-hours
    each would take, configurations that cannot fit the card's memory, and a capacity bound
    on the cards the window would need. Empty when the goal is met."""
    if meets(goal, plan):
        return []
    if plan.embedding is not None:
        return _embedding_needs(goal, plan)
    training = preset.training
    assert training is not None
    return _training_needs(goal, preset, training, plan)


def _training_needs(goal: Goal, preset: Preset, training: Training, plan: Plan) -> list[str]:
    o = preset.overheads
    figures = {f.config: f for f in plan.assumptions.figures}
    names = list(figures)
    budget = plan.assumptions.memory_budget_gib
    out = [f"{f.config} does not fit the card's memory (peak {f.planned_peak_gib:.1f} GiB, "
           f"{budget:.1f} GiB usable)" for f in figures.values() if not f.fits]
    hours = {n: run_hours(training.steps, figures[n].step_time_s.value, o) for n in names}
    trained = {(r.variant, r.seed) for r in plan.runs if r.kind == "train"}
    missing = [(seed, n) for seed in training.seeds for n in names
               if (n, seed) not in trained and figures[n].fits]
    done = set(complete_seeds(plan))
    placed: float | None = None
    if goal.kind == "seeds":
        wanted = [s for s in training.seeds if s not in done][:goal.count - len(done)]
        missing = [(s, n) for s, n in missing if s in wanted]
        # The packer may place runs of later seeds too: only the goal's seeds count.
        placed = sum((r.end_h - r.start_h) * len(r.card) for r in plan.runs
                     if r.kind == "train" and (r.seed in done or r.seed in wanted))
    elif goal.kind == "runs":
        short = goal.count - plan.summary.matrix_runs_fit
        missing = sorted(missing, key=lambda m: hours[m[1]])[:short]
    per_run = training.cards_per_run
    by_seed: dict[int, list[str]] = {}
    for seed, n in missing:
        by_seed.setdefault(seed, []).append(n)
    out += _seed_lines({seed: [(n, hours[n] * per_run) for n in ns]
                        for seed, ns in by_seed.items()})
    work = sum(hours[n] * per_run for _, n in missing)
    if goal.kind == "all":
        evals = Counter((r.variant, r.seed) for r in plan.runs if r.kind == "robustness")
        lacking = eval_work = 0.0
        for seed in training.seeds:
            for n in names:
                controls = [r for r in training.robustness
                            if not r.applies_to or n in r.applies_to]
                if figures[n].fits and len(controls) > evals[(n, seed)]:
                    # The evaluations that ran are not told apart: count the shortest ones
                    # as run, so the figure stays a lower bound.
                    rest = sorted(o.startup_minutes + r.eval_minutes for r in controls)
                    rest = rest[evals[(n, seed)]:]
                    lacking += len(rest)
                    eval_work += sum(rest) / 60 * per_run
        if lacking:
            out.append(f"{lacking:.0f} robustness evaluation{'s' if lacking > 1 else ''} "
                       f"need{'s' if lacking == 1 else ''} {eval_work:.1f} more card-hours")
        work += eval_work
    return out + _capacity(plan, work, max((hours[n] for _, n in missing), default=0.0),
                           placed)


def _names(names: list[str], most: int = 3) -> str:
    if len(names) <= most:
        return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
    return f"{', '.join(names[:most])} and {len(names) - most} more"


def _seed_lines(by_seed: dict[int, list[tuple[str, float]]], most: int = 3) -> list[str]:
    """One line per seed with missing runs, e.g. "seed 2 of alibi needs 32.8 more
    card-hours"; seeds beyond `most` summed on one line."""
    out = []
    seeds = list(by_seed)
    for seed in seeds[:most]:
        runs = by_seed[seed]
        names = [n for n, _ in runs]
        verb = "needs" if len(runs) == 1 else "need"
        out.append(f"seed {seed} of {_names(names)} {verb} "
                   f"{sum(ch for _, ch in runs):.1f} more card-hours")
    rest = seeds[most:]
    if rest:
        runs = [r for seed in rest for r in by_seed[seed]]
        out.append(f"seed{'s' if len(rest) > 1 else ''} {_names([str(s) for s in rest], 6)}: "
                   f"{len(runs)} more run{'s' if len(runs) > 1 else ''}, "
                   f"{sum(ch for _, ch in runs):.1f} card-hours")
    return out


def _embedding_needs(goal: Goal, plan: Plan) -> list[str]:
    e = plan.embedding
    assert e is not None
    n = plan.campaign.cards
    chosen = next(s for s in e.strategies if s.strategy == e.batching)
    startup = plan.assumptions.overheads.startup_minutes / 60
    part_h = startup + chosen.hours_per_version
    parts = Counter(r.version for r in plan.runs)
    upto = e.versions_wanted if goal.kind == "all" else goal.count
    work = [(v, (n - parts[v]) * part_h) for v in range(1, upto + 1) if parts[v] < n]
    out = [f"version {v} needs {ch:.1f} more card-hours" for v, ch in work]
    return out + _capacity(plan, sum(ch for _, ch in work), part_h)


def _capacity(plan: Plan, missing_work: float, longest: float,
              placed: float | None = None) -> list[str]:
    """A true lower bound on what the order would need: no schedule fits more work than
    cards × usable hours, and no run longer than the usable window fits at all. `placed`:
    the card-hours already placed that the goal needs (default: all that are busy)."""
    c = plan.campaign
    if longest > c.usable_hours:
        return [f"a run of {longest:.1f} h cannot finish in the {c.usable_hours:.1f} usable "
                "hours of this window: a longer window"]
    work = (plan.summary.busy_card_hours if placed is None else placed) + missing_work
    at_least = math.ceil(work / c.usable_hours - 1e-9) if c.usable_hours > 0 else 0
    if at_least > c.cards:
        return [f"at least {at_least} cards for this window ({work:.1f} card-hours of work "
                f"in {c.usable_hours:.1f} usable hours per card)"]
    return [f"{plan.summary.idle_card_hours:.1f} card-hours stay idle, split across the cards: "
            "enough in total, not in one piece"]


def headroom(plan: Plan) -> float | None:
    """Smallest memory headroom over the configurations that fit: GiB under the card's
    memory less the margin; None for embedding plans (no memory figure)."""
    a = plan.assumptions
    left = [a.memory_budget_gib - f.planned_peak_gib for f in a.figures if f.fits]
    return round(min(left), 3) if left else None

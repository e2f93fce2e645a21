"""Factor sweeps: one factor of the baseline at several levels, written once and expanded
into one one-factor variant per level when the preset loads.

The expanded variants are ordinary variants (they carry `sweep`, the factor they came
from), so everything downstream — the one-factor rule, figures on other cards, the packer,
plan.toml, `run` and the SLURM export — sees them as if they had been written by hand.
"""

import re
from typing import TYPE_CHECKING, Any

from pydantic import Field, field_validator, model_validator

from planner.spec import bounds
from planner.spec.base import Strict
from planner.spec.costs import Figure
from planner.spec.factors import (
    FACTOR_NAME,
    FactorValue,
    alike,
    another_type,
    check_factors,
    kind,
    same_value,
)
from planner.spec.paths import NAME_CHARS

if TYPE_CHECKING:
    from planner.spec.training import Baseline, Variant


MAX_LEVELS = 1000
"""Most levels one sweep may list."""
VARIANT_NAME = r"^[A-Za-z0-9][A-Za-z0-9._=-]*$"
"""Variant names: letters, digits, `.`, `_`, `-` and `=` (a sweep's `lr=0.0003`), not
starting with a dot."""


class Sweep(Strict):
    """One factor of the baseline at several levels: one variant per level, each changing
    only that factor."""

    factor: str
    """The baseline factor swept, e.g. `lr`."""
    levels: list[FactorValue] = Field(min_length=1, max_length=MAX_LEVELS)
    """Its levels, e.g. `[1e-4, 3e-4, 1e-3]`: one variant each; the baseline's own level,
    when listed, is skipped with a note in the plan."""
    names: list[str] = []
    """Variant names, one per level in the same order (default `factor=level`, e.g.
    `lr=0.0003`); at most 64 characters each."""
    step_time_s: Figure | None = None
    """Seconds per optimizer step of every level (default: the baseline's figure, for a
    factor such as a learning rate that leaves the step's cost alone)."""
    peak_memory_gib: Figure | None = None
    """Peak device memory per card of every level, in GiB (default: the baseline's)."""
    memory_per_sample_gib: float | None = Field(default=None, gt=0, le=bounds.GIB)
    """How much the peak grows per micro-batch sample (default: the baseline's)."""

    @field_validator("factor")
    @classmethod
    def _factor(cls, v: str) -> str:
        if not FACTOR_NAME.fullmatch(v):
            raise ValueError(f"factor name {v[:80]!r} is not identifier-like: letters, "
                             "digits, `_`, `.` and `-`, starting with a letter or `_`, at "
                             "most 64 characters")
        return v

    @field_validator("levels")
    @classmethod
    def _levels(cls, v: list[FactorValue]) -> list[FactorValue]:
        for i, level in enumerate(v):
            check_factors({"level": level})
            for j in range(i):
                if same_value(v[j], level):
                    raise ValueError(f"level {level!r} is listed twice (levels[{j}] and "
                                     f"levels[{i}])")
                if another_type(v[j], level):
                    raise ValueError(f"levels[{i}] {level!r} ({kind(level)}) is levels[{j}] "
                                     f"{v[j]!r} ({kind(v[j])}) in another type: one level "
                                     "listed twice")
        return v

    @field_validator("names")
    @classmethod
    def _names(cls, v: list[str]) -> list[str]:
        for name in v:
            if not re.fullmatch(VARIANT_NAME, name) or len(name) > NAME_CHARS:
                raise ValueError(f"{name[:80]!r} is not a variant name: letters, digits, "
                                 "`.`, `_`, `-` and `=`, at most 64 characters")
        return v

    @model_validator(mode="after")
    def _one_name_per_level(self) -> "Sweep":
        if self.names and len(self.names) != len(self.levels):
            raise ValueError(f"@names: {len(self.names)} names for {len(self.levels)} levels; "
                             "give one name per level, or none")
        return self

    def name_of(self, i: int) -> str:
        """The name of level `i`'s variant."""
        return self.names[i] if self.names else f"{self.factor}={show(self.levels[i])}"


def show(v: object) -> str:
    """A level as it reads in a variant name (`true`, `0.0003`, `cosine`)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def skipped_levels(baseline: "Baseline", sweeps: "list[Sweep]") -> list[tuple[int, int]]:
    """(sweep, level) of every level equal to the baseline's own value of the factor."""
    out = []
    for s, sweep in enumerate(sweeps):
        if sweep.factor in baseline.factors:
            own = baseline.factors[sweep.factor]
            out += [(s, i) for i, level in enumerate(sweep.levels) if same_value(level, own)]
    return out


def sweep_notes(baseline: "Baseline", sweeps: "list[Sweep]") -> list[str]:
    """What the expansion decided, in words, for the plan's decisions."""
    notes = []
    skipped = set(skipped_levels(baseline, sweeps))
    for s, sweep in enumerate(sweeps):
        made = [sweep.name_of(i) for i in range(len(sweep.levels)) if (s, i) not in skipped]
        text = (f"sweep over {sweep.factor}: {len(made)} variant{'s' if len(made) != 1 else ''}"
                f" ({', '.join(made[:6])}{', …' if len(made) > 6 else ''})")
        own = [show(sweep.levels[i]) for i in range(len(sweep.levels)) if (s, i) in skipped]
        if own:
            text += f"; level {own[0]} is the baseline's own, so it is not run again"
        inherited = [k for k, f in (("step time", sweep.step_time_s),
                                    ("peak memory", sweep.peak_memory_gib)) if f is None]
        if inherited and made:
            text += f"; {' and '.join(inherited)} taken from the baseline"
        notes.append(text)
    return notes


def expand(baseline: "Baseline", sweeps: "list[Sweep]", hand: "list[Variant]",
           marked: "list[tuple[int, Variant]]") -> list[dict[str, Any]]:
    """The fields of the variants the sweeps expand into, after `hand` (the variants
    written by hand).

    `marked` are (index, variant) of variants already carrying a `sweep` (a saved or
    re-validated preset): each must name a factor swept, and is made again from its sweep
    (a changed baseline level may make other variants than before). Raises
    ValueError (`@field: message`) for a sweep of a factor the baseline lacks, and for a
    variant that collides with another by name or by factor and value."""
    out: list[dict[str, Any]] = []
    skipped = set(skipped_levels(baseline, sweeps))
    taken: dict[str, str] = {v.name: f"variants {v.name!r}" for v in hand}
    cells = [(f, val, f"variants {v.name!r}") for v in hand for f, val in v.changes.items()
             if len(v.changes) == 1]
    for s, sweep in enumerate(sweeps):
        if sweep.factor not in baseline.factors:
            known = ", ".join(sorted(baseline.factors))
            raise ValueError(f"@sweeps[{s}].factor: {sweep.factor!r} is not a baseline factor "
                             f"(baseline factors: {known})")
        own = baseline.factors[sweep.factor]
        for i, level in enumerate(sweep.levels):
            if (s, i) in skipped:
                continue
            if another_type(level, own):
                raise ValueError(f"@sweeps[{s}].levels[{i}]: level {level!r} ({kind(level)}) "
                                 f"is the baseline's {sweep.factor} = {own!r} ({kind(own)}) "
                                 "in another type; write it as the baseline does to leave "
                                 "it out, or the value the level means")
            name = sweep.name_of(i)
            where = f"sweeps[{s}] level {show(level)} ({name!r})"
            if len(name) > NAME_CHARS or not re.fullmatch(VARIANT_NAME, name):
                raise ValueError(f"@sweeps[{s}].levels[{i}]: {name[:40]!r} is not a variant "
                                 f"name (letters, digits, `.`, `_`, `-` and `=`, at most "
                                 f"{NAME_CHARS} characters); give `names`")
            if name in taken or name == "baseline":
                raise ValueError(f"@sweeps[{s}].names: {where} has the name of "
                                 f"{taken.get(name, 'the baseline')}")
            for factor, value, other in cells:
                if factor == sweep.factor and alike(value, level):
                    raise ValueError(f"@sweeps[{s}].levels[{i}]: {where} sets {factor} = "
                                     f"{show(level)}, as {other} already does")
            taken[name] = where
            cells.append((sweep.factor, level, where))
            out.append(_variant(baseline, sweep, name, level))
    swept = {sweep.factor for sweep in sweeps}
    for i, v in marked:
        if v.sweep not in swept:
            raise ValueError(f"@variants[{i}].sweep: variant {v.name!r} says it comes from "
                             f"a sweep over {v.sweep!r}, and there is none; remove `sweep` "
                             "to keep it as a variant of its own")
    return out


def _variant(baseline: "Baseline", sweep: Sweep, name: str,
             level: FactorValue) -> dict[str, Any]:
    own = sweep.memory_per_sample_gib
    return {
        "name": name, "changes": {sweep.factor: level}, "sweep": sweep.factor,
        "step_time_s": sweep.step_time_s or baseline.step_time_s,
        "peak_memory_gib": sweep.peak_memory_gib or baseline.peak_memory_gib,
        "memory_per_sample_gib": own if own is not None else baseline.memory_per_sample_gib,
    }

"""The training workload (ablation and adaptation): baseline, one-factor variants, seeds."""

import math
import re
from typing import Annotated, Literal, Self

from pydantic import Field, field_validator, model_validator

from planner.spec import bounds
from planner.spec.base import SLUG, Strict
from planner.spec.costs import Figure
from planner.spec.measure import MeasureSpec
from planner.spec.model_size import ModelSize
from planner.spec.paths import NAME_CHARS, check_root
from planner.spec.templates import TRAINING_PLACEHOLDERS
from planner.spec.templates import check_command as _checked

FactorValue = str | int | float | bool
Seed = Annotated[int, Field(ge=-bounds.SEED_LIMIT, lt=bounds.SEED_LIMIT)]
"""A seed: a signed 64-bit integer."""
MAX_SEEDS = 1000
MAX_VARIANTS = 1000
MAX_CONTROLS = 100
MAX_RUNS = 100_000
"""Most runs a training matrix may expand to (configurations × seeds × (1 + controls))."""

FACTOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
"""A factor name: identifier-like (dots and dashes allowed after the first character), at
most 64 characters; it becomes `name=value` in {overrides}."""
MAX_VALUE_CHARS = 1024
"""Longest text value of a factor."""


def check_factors(v: dict[str, FactorValue]) -> dict[str, FactorValue]:
    """Factor names identifier-like; values finite numbers or bounded text."""
    for name, value in v.items():
        if not FACTOR_NAME.fullmatch(name):
            raise ValueError(f"factor name {name[:80]!r} is not identifier-like: letters, "
                             "digits, `_`, `.` and `-`, starting with a letter or `_`, at "
                             "most 64 characters")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"factor {name}: {value} is not a finite number")
        if isinstance(value, str) and (len(value) > MAX_VALUE_CHARS
                                       or any(c in value for c in "\0\n\r")):
            raise ValueError(f"factor {name}: text values are at most {MAX_VALUE_CHARS} "
                             "characters, without NUL or line breaks")
    return v


class Costed(Strict):
    """Step time and peak memory of one configuration, each with provenance."""

    step_time_s: Figure
    """Seconds per optimizer step (micro-batch × accumulation samples per card)."""
    peak_memory_gib: Figure
    """Peak device memory per card at the workload's micro-batch, in GiB."""
    memory_per_sample_gib: float | None = Field(default=None, gt=0, le=bounds.GIB)
    """How much the peak grows per micro-batch sample; lets the planner shrink the
    micro-batch (raising accumulation) when the peak does not fit the card."""


class Baseline(Costed):
    """The kept reference configuration every variant is compared to."""

    factors: dict[str, FactorValue]
    """The baseline's factors: name → value (e.g. `augmentation = "randaug"`)."""

    @field_validator("factors")
    @classmethod
    def _some(cls, v: dict[str, FactorValue]) -> dict[str, FactorValue]:
        if not v:
            raise ValueError("the baseline needs at least one factor")
        return check_factors(v)


class Variant(Costed):
    """One ablation: the baseline with exactly one factor changed."""

    name: str = Field(pattern=SLUG, max_length=NAME_CHARS)
    """Variant name, used in run ids; at most 64 characters."""
    changes: dict[str, FactorValue]
    """The factor this variant changes and its new value, e.g. `{ loss = "ce" }`."""
    waive_one_factor: str = ""
    """A reason to accept a variant that breaks the one-factor rule; the break becomes a
    warning carried into the plan instead of an error."""

    @field_validator("changes")
    @classmethod
    def _changes(cls, v: dict[str, FactorValue]) -> dict[str, FactorValue]:
        return check_factors(v)


class Robustness(Strict):
    """An extra evaluation run on trained checkpoints, scheduled after all training."""

    name: str = Field(pattern=SLUG, max_length=NAME_CHARS)
    """Control name, used in run ids; at most 64 characters."""
    eval_minutes: float = Field(gt=0, le=bounds.MINUTES)
    """Duration of this evaluation for one trained run."""
    applies_to: list[str] = []
    """Variant names it evaluates (`baseline` for the baseline); empty means all."""
    command: str
    """Command for one evaluation; {checkpoint_dir} and {resume} name the trained run's
    checkpoints, other placeholders as for training runs."""
    shell: bool = False
    """Run the command with `/bin/sh -c` (pipes, `&&`, redirections, `$VAR`); without it
    the command is an argument vector started with no shell."""

    @model_validator(mode="after")
    def _template(self) -> Self:
        return _checked(self, TRAINING_PLACEHOLDERS)


class Training(Strict):
    """An ablation matrix: a kept baseline, one-factor variants, repeated over seeds."""

    steps: int = Field(ge=1, le=bounds.STEPS)
    """Optimizer steps per run."""
    seeds: list[Seed] = Field(min_length=1, max_length=MAX_SEEDS)
    """Seeds; the whole matrix repeats once per seed, in this order (at most 1000)."""
    micro_batch: int = Field(ge=1, le=bounds.BATCH)
    """Samples per card per forward pass."""
    accumulation: int = Field(default=1, ge=1, le=bounds.BATCH)
    """Micro-batches accumulated per optimizer step."""
    cards_per_run: int = Field(default=1, ge=1, le=4096)
    """Cards one run uses (data parallel)."""
    effective_batch: int | None = Field(default=None, ge=1, le=bounds.EFFECTIVE_BATCH)
    """The rule every variant keeps: micro_batch × accumulation × cards_per_run. Optional;
    when given it must equal that product."""
    baseline: Baseline
    """The kept baseline."""
    variants: list[Variant] = Field(default=[], max_length=MAX_VARIANTS)
    """The variants, written down before the first launch (at most 1000)."""
    robustness: list[Robustness] = Field(default=[], max_length=MAX_CONTROLS)
    """Robustness controls: extra evaluations, scheduled last (at most 100)."""
    max_retries: int = Field(default=1, ge=0, le=1000)
    """How often the executor retries a failed run before marking it failed."""
    command: str
    """Command for one run, with placeholders such as {run_id}, {seed}, {overrides},
    {factors[name]}, {checkpoint_dir}, {resume}, {micro_batch}, {accumulation}."""
    shell: bool = False
    """Run the command with `/bin/sh -c` (pipes, `&&`, redirections, `$VAR`); without it
    the command is an argument vector started with no shell."""
    checkpoint_root: str = "checkpoints"
    """Folder holding one checkpoint folder per run, named by run id: relative to the
    working directory, or absolute (a data disk); never with `..`."""
    export_root: str = "exports"
    """Folder holding final exports, named by run id; relative or absolute, never `..`."""
    measure: MeasureSpec | None = None
    """How `campaign-planner measure` builds this workload: a reference transformer or your
    own factory (see `planner.spec.measure`)."""
    model: ModelSize | None = None
    """The model trained, at its real size, for the analytic tier (see
    `planner.spec.model_size`); without it the analytic tier computes on `measure`."""

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        seen: set[int] = set()
        for s in v:
            if s in seen:
                raise ValueError(f"seed {s} is listed twice; seeds must be distinct")
            seen.add(s)
        return v

    @model_validator(mode="after")
    def _template(self) -> Self:
        return _checked(self, TRAINING_PLACEHOLDERS)

    @field_validator("checkpoint_root", "export_root")
    @classmethod
    def _root(cls, v: str) -> str:
        return check_root(v)

    @model_validator(mode="after")
    def _batch_rule(self) -> Self:
        product = self.micro_batch * self.accumulation * self.cards_per_run
        if self.effective_batch is not None and self.effective_batch != product:
            raise ValueError(
                f"@effective_batch: {self.effective_batch} != micro_batch × accumulation × "
                f"cards_per_run = {self.micro_batch} × {self.accumulation} × "
                f"{self.cards_per_run} = {product}"
            )
        runs = (1 + len(self.variants)) * len(self.seeds) * (1 + len(self.robustness))
        if runs > MAX_RUNS:
            raise ValueError(f"@seeds: the matrix would have {runs} runs; at most "
                             f"{MAX_RUNS} are planned")
        names = [v.name for v in self.variants]
        for name in names:
            if name == "baseline":
                raise ValueError("@variants: a variant may not be named `baseline`")
            if names.count(name) > 1:
                raise ValueError(f"@variants: variant name {name!r} is used twice")
        known = {"baseline", *names}
        for rob in self.robustness:
            for target in rob.applies_to:
                if target not in known:
                    raise ValueError(
                        f"@robustness: {rob.name!r} applies to unknown variant {target!r}"
                    )
        return self

    @property
    def rule_batch(self) -> int:
        """The effective batch every variant keeps."""
        return self.micro_batch * self.accumulation * self.cards_per_run


class Adaptation(Training):
    """Fine-tuning: a training matrix whose base model, trained parameters and data stay
    associated in every run."""

    base_model: str
    """The pretrained model adapted (name or path)."""
    trained_parameters: Literal["full", "adapter"]
    """Which parameters are trained: all of them, or an adapter."""
    dataset: str
    """The adaptation dataset (name or path)."""

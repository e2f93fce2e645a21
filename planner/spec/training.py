"""The training workload (ablation and adaptation): baseline, one-factor variants, seeds."""

import operator
from typing import Annotated, ClassVar, Literal, Self

from pydantic import Field, field_validator, model_validator

from planner.spec import bounds
from planner.spec.base import SLUG, Strict
from planner.spec.costs import Figure
from planner.spec.factors import FactorValue, check_factors, disguised_configs
from planner.spec.measure import MeasureSpec
from planner.spec.model_size import ModelSize
from planner.spec.paths import NAME_CHARS, check_root
from planner.spec.sweeps import VARIANT_NAME, Sweep, expand
from planner.spec.templates import TRAINING_PLACEHOLDERS
from planner.spec.templates import check_command as _checked

Seed = Annotated[int, Field(ge=-bounds.SEED_LIMIT, lt=bounds.SEED_LIMIT)]
"""A seed: a signed 64-bit integer."""
MAX_SEEDS = 1000
MAX_VARIANTS = 1000
MAX_CONTROLS = 100
MAX_RUNS = 100_000
"""Most runs a training matrix may expand to (configurations × seeds × (1 + controls))."""

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

    name: str = Field(pattern=VARIANT_NAME, max_length=NAME_CHARS)
    """Variant name, used in run ids: letters, digits, `.`, `_`, `-` and `=`; at most 64
    characters."""
    changes: dict[str, FactorValue]
    """The factor this variant changes and its new value, e.g. `{ loss = "ce" }`."""
    waive_one_factor: str = ""
    """A reason to accept a variant that breaks the one-factor rule; the break becomes a
    warning carried into the plan instead of an error."""
    # Left out of a dump while empty, as `sweeps` below: a preset without sweeps keeps
    # its fingerprint, hence its campaign id and run ids.
    sweep: str = Field(default="", exclude_if=operator.not_)
    """The factor of the sweep this variant was expanded from (written by the planner when
    it saves a preset; empty for a variant written by hand). Such a variant is made again
    from its sweep whenever the preset loads."""

    @field_validator("changes")
    @classmethod
    def _changes(cls, v: dict[str, FactorValue]) -> dict[str, FactorValue]:
        return check_factors(v)


class Robustness(Strict):
    """An extra evaluation run on trained checkpoints, scheduled after all training."""

    SCRIPTS: ClassVar[frozenset[str]] = frozenset({"command"})

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

    SCRIPTS: ClassVar[frozenset[str]] = frozenset({"command"})

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
    """The variants, written down before the first launch (at most 1000, with those the
    sweeps expand into)."""
    sweeps: list[Sweep] = Field(default=[], max_length=MAX_VARIANTS, exclude_if=operator.not_)
    """Factor sweeps (`[[ablation.sweeps]]`): one baseline factor at several levels, each
    level a variant changing only that factor, listed after the hand-written variants."""
    robustness: list[Robustness] = Field(default=[], max_length=MAX_CONTROLS)
    """Robustness controls: extra evaluations, scheduled last (at most 100)."""
    max_retries: int = Field(default=1, ge=0, le=1000)
    """How often the executor retries a failed run before marking it failed."""
    # Left out of the canonical form while on: a preset keeps the campaign id it had.
    tracking: bool = Field(default=True, exclude_if=operator.truth)
    """Name each run for W&B, MLflow and TensorBoard: `run` and the SLURM task set
    WANDB_RUN_GROUP (the campaign id), WANDB_NAME and WANDB_RUN_ID (the run id),
    WANDB_RESUME=allow, MLFLOW_EXPERIMENT_NAME (the campaign id), MLFLOW_TAGS (the run id as
    `mlflow.runName`) and TENSORBOARD_LOGGING_DIR (`<checkpoint folder>/tensorboard/<run
    id>`), each only where the environment does not set it already. `false`: none."""
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
    def _expand_sweeps(self) -> Self:
        # Runs before the checks below, which then judge the expanded list.
        if not self.sweeps and not any(v.sweep for v in self.variants):
            return self
        hand = [v for v in self.variants if not v.sweep]
        marked = [(i, v) for i, v in enumerate(self.variants) if v.sweep]
        made = [Variant(**v) for v in expand(self.baseline, self.sweeps, hand, marked)]
        if len(hand) + len(made) > MAX_VARIANTS:
            raise ValueError(f"@sweeps: with the sweeps' {len(made)} variants there would be "
                             f"{len(hand) + len(made)}; at most {MAX_VARIANTS} are planned")
        return self.model_copy(update={"variants": [*hand, *made]})

    @model_validator(mode="after")
    def _distinct_configs(self) -> Self:
        # After the sweeps' expansion: their variants are judged with the hand-written ones.
        problem = disguised_configs(self.baseline.factors,
                                    [(v.name, v.changes) for v in self.variants])
        if problem:
            raise ValueError(problem)
        return self

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

"""The Plan: what every front end shows, and what `plan.toml` holds."""

import operator
from typing import Annotated, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from planner.packing.capacity import Capacity
from planner.planfile import rules
from planner.planfile.embedding import EmbeddingPlan
from planner.spec import bounds
from planner.spec.base import SLUG, Lax
from planner.spec.costs import Figure, MeasuredFrom
from planner.spec.paths import NAME_CHARS, check_run_id, check_run_path
from planner.spec.preset import FactorValue, Overheads
from planner.spec.sweeps import VARIANT_NAME


class PlanCampaign(Lax):
    """The rental and its usable window."""

    id: str = Field(pattern=SLUG, max_length=NAME_CHARS + 7)  # a name, `-`, 6 hex digits
    """Stable campaign id: carried by every run id, checkpoint folder and export name."""
    name: str = Field(pattern=SLUG, max_length=NAME_CHARS)
    """Campaign name from the preset."""
    kind: Literal["ablation", "embedding", "adaptation"]
    """Campaign kind."""
    created: str
    """When the plan was made (ISO 8601)."""
    card: str = Field(pattern=SLUG, max_length=NAME_CHARS)
    """Card model (catalog key)."""
    card_name: str = Field(max_length=256)
    """Card model in full."""
    cards: int = Field(ge=1, le=4096)
    """Cards rented."""
    window_hours: float = Field(gt=0, le=bounds.HOURS)
    """Rental window."""
    usable_hours: float = Field(ge=0, le=bounds.HOURS)
    """Window less the stack check at the start and the safety margin at the end."""
    usable_from_h: float = Field(ge=0, le=bounds.HOURS)
    """Hour the first run may start (after the stack check)."""
    usable_until_h: float = Field(ge=0, le=bounds.HOURS)
    """Hour every run must have ended by (before the safety margin)."""
    fingerprint: str = Field(pattern=r"^[0-9a-f]{64}$")
    """SHA-256 of the preset's canonical form."""
    price_per_card_hour: float | None = Field(default=None, ge=0, le=bounds.PRICE)
    """Price of one card-hour, when known."""
    currency: str = Field(default="USD", max_length=16)
    """Currency of the price."""
    # Left out of plan.toml while on: a plan that names its runs reads as before.
    tracking: bool = Field(default=True, exclude_if=operator.truth)
    """Whether `run` and the SLURM task name the runs for W&B, MLflow and TensorBoard
    through their environment variables (the preset's `tracking`)."""

    @field_validator("created")
    @classmethod
    def _created(cls, v: str) -> str:
        return rules.check_created(v)


class ConfigFigures(Lax):
    """Figures behind one configuration, each with its provenance."""

    config: str
    """`baseline` or the variant's name."""
    step_time_s: Figure
    """Seconds per optimizer step."""
    peak_memory_gib: Figure
    """Peak device memory at the workload's micro-batch."""
    planned_peak_gib: float
    """Peak expected as planned (after any micro-batch reduction)."""
    micro_batch: int
    """Micro-batch as planned."""
    accumulation: int
    """Accumulation as planned."""
    fits: bool
    """Whether the configuration fits the card's memory."""


class Assumptions(Lax):
    """Every overhead and figure the plan rests on."""

    overheads: Overheads
    """Overheads from the preset."""
    card_memory_gib: float
    """Memory of the card."""
    memory_budget_gib: float
    """Memory a run may use: usable card memory less the CUDA context and the margin."""
    figures: list[ConfigFigures] = []
    """Training figures per configuration."""
    throughput_tokens_per_s: Figure | None = None
    """Embedding throughput per card."""
    measurements: MeasuredFrom | None = None
    """Where measured figures came from (`--measurements FILE`), when any."""
    estimate: Literal["typical", "cautious"] = "cautious"
    """Which end of their range scaled and analytic figures are planned on: `cautious`
    takes the slow end (the default), `typical` the calibrated value."""
    measured_configs: list[str] = []
    """Configurations whose figures come from the measurements."""
    configs_total: int = 0
    """Configurations in the campaign (baseline and variants; 1 for an embedding)."""
    # Left out of plan.toml while empty: a plan without overrides reads as before.
    overrides: list[str] = Field(default=[], exclude_if=operator.not_)
    """What the command line changed from the preset (`--card`, `--cards`, `--days`,
    `--hours`, `--seeds`), e.g. `cards 4 → 8 (command line)`."""


class Run(Lax):
    """One scheduled run."""

    id: str
    """Run id: campaign id, configuration, seed (and control)."""
    kind: Literal["train", "robustness", "embed"]
    """Training run, robustness evaluation, or embedding shard."""
    variant: str = Field(pattern=VARIANT_NAME, max_length=NAME_CHARS)
    """`baseline` or the variant's name (embedding: `v` and the version)."""
    factor: str = Field(pattern=rules.FACTORS, max_length=rules.FACTORS_CHARS)
    """The factor changed from the baseline (empty for the baseline)."""
    value: FactorValue
    """Its new value (empty for the baseline)."""
    seed: Annotated[int, Field(ge=-bounds.SEED_LIMIT, lt=bounds.SEED_LIMIT)] | None = None
    """Seed (training and robustness runs)."""
    version: int | None = Field(default=None, ge=1, le=bounds.VERSIONS)
    """Representation version (embedding shards)."""
    shard: int | None = Field(default=None, ge=0, le=bounds.DOCUMENTS)
    """Shard index (embedding shards)."""
    card: list[Annotated[int, Field(ge=0, lt=4096)]] = Field(min_length=1, max_length=4096)
    """0-based indices of the cards it runs on."""
    start_h: float = Field(ge=0, le=bounds.HOURS)
    """Start, in hours from the window's start."""
    end_h: float = Field(ge=0, le=bounds.HOURS)
    """Planned end, in hours from the window's start."""
    steps: int = Field(ge=0, le=bounds.STEPS)
    """Optimizer steps (0 for evaluations and embedding shards)."""
    micro_batch: int = Field(ge=0, le=bounds.BATCH)
    """Micro-batch per card."""
    accumulation: int = Field(ge=0, le=bounds.BATCH)
    """Gradient accumulation."""
    effective_batch: int = Field(ge=0, le=bounds.EFFECTIVE_BATCH)
    """micro_batch × accumulation × cards."""
    checkpoint_dir: str
    """Folder of this run's checkpoints, named by run id."""
    export_name: str
    """Name of the run's final export, carrying the run id."""
    command: str
    """Command that runs it, placeholders filled, as people read it: the argument vector
    joined with shell quoting, or the script with `shell`."""
    argv: list[str] = Field(min_length=1, max_length=rules.ARGV_WORDS)
    """The argument vector the run starts as, with no shell; with `shell`, `/bin/sh`, `-c`
    and the script."""
    shell: bool = False
    """Whether the command is a shell script (the preset's `shell = true`)."""
    resume: str
    """Path a relaunch resumes from (its latest checkpoint)."""
    depends_on: str = ""
    """Run that must finish first (robustness evaluations)."""
    max_retries: int = Field(default=0, ge=0, le=1000)
    """Retries before the run is marked failed."""

    # A plan.toml is a file people edit: what names files is checked again on reading.
    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return check_run_id(v)

    @field_validator("depends_on")
    @classmethod
    def _depends(cls, v: str) -> str:
        return v and check_run_id(v)

    @field_validator("checkpoint_dir", "export_name", "resume")
    @classmethod
    def _path(cls, v: str) -> str:
        return check_run_path(v)

    @field_validator("value")
    @classmethod
    def _value(cls, v: FactorValue) -> FactorValue:
        return rules.check_value(v)

    @model_validator(mode="after")
    def _consistent(self, info: ValidationInfo) -> Self:
        context = info.context
        rules.check_run(self, isinstance(context, dict)
                        and context.get(rules.DERIVED_COMMANDS) is True)
        return self


class NotFitting(Lax):
    """A run left out, and why."""

    id: str
    """Run id."""
    reason: str
    """Why it is not scheduled."""


class TableRow(Lax):
    """One row of the variant × seed table."""

    variant: str
    """`baseline` or the variant's name."""
    complete_seeds: list[int]
    """Seeds whose run of this configuration is scheduled to complete."""
    missing_seeds: list[int]
    """Seeds whose run does not fit."""


class Summary(Lax):
    """The headline figures."""

    card_hours_bought: float
    """Window × cards."""
    reserved_hours: float
    """Stack check plus safety margin, per card."""
    usable_card_hours: float
    """Usable hours × cards."""
    busy_card_hours: float
    """Card-hours with a run on them."""
    idle_card_hours: float
    """Usable card-hours with nothing on them."""
    utilization: float
    """Busy ÷ usable card-hours."""
    runs_total: int
    """Runs in the campaign (matrix, controls, or shards)."""
    runs_scheduled: int
    """Runs that fit."""
    matrix_runs: int
    """Training runs in the matrix (baseline + variants) × seeds."""
    matrix_runs_fit: int
    """Training runs of the matrix that fit."""
    optimal: bool | Literal["unknown"] | None = None
    """Whether the packing is proven optimal for the objective's counts (complete seed sets,
    matrix runs, evaluations): true, false (the optimizer stopped with a gap), or unknown
    (training campaigns; absent for embedding shards)."""
    matrix_runs_upper_bound: int | None = None
    """No schedule fits more matrix runs than this (the optimizer's bound, else card-hours;
    training campaigns)."""
    makespan_h: float
    """Hour the last scheduled run ends."""
    table: list[TableRow] = []
    """The variant × seed table."""
    first_complete_seed: int | None = None
    """First seed whose whole matrix completes."""
    first_complete_seed_end_h: float | None = None
    """Hour that seed's last run ends."""
    cost_total: float | None = None
    """Price × card-hours bought, when a price is known."""
    cost_per_matrix_run: float | None = None
    """Total cost ÷ training runs that fit, when a price is known."""
    capacity: Capacity | None = None
    """How much the window holds beyond what is asked (`planner.packing.capacity`)."""


class AdaptationPlan(Lax):
    """What an adaptation campaign keeps associated in every run."""

    base_model: str
    """The pretrained model adapted."""
    trained_parameters: str
    """`full` or `adapter`."""
    dataset: str
    """The adaptation dataset."""


class Plan(Lax):
    """A planned campaign."""

    campaign: PlanCampaign
    """The rental."""
    assumptions: Assumptions
    """What the plan rests on."""
    runs: list[Run]
    """Scheduled runs, in plan order."""
    not_fitting: list[NotFitting]
    """Runs left out, with reasons."""
    decisions: list[str] = []
    """Documented changes the planner made (micro-batch reductions)."""
    warnings: list[str] = []
    """Things the user should know before ordering."""
    summary: Summary
    """Headline figures."""
    embedding: EmbeddingPlan | None = None
    """Embedding settings and counts (embedding campaigns)."""
    adaptation: AdaptationPlan | None = None
    """Base model, trained parameters and dataset (adaptation campaigns)."""
    # A replan's revision fields; left out of a fresh plan, which reads as before.
    revision: int = Field(default=0, ge=0, le=1_000_000, exclude_if=operator.not_)
    """0 for a plan made from its preset; each replan counts one more."""
    parent: str = Field(default="", exclude_if=operator.not_)
    """Id of the plan this revision replaces (`plan_id`)."""
    held: list[Run] = Field(default=[], exclude_if=operator.not_)
    """Runs left out (by the planner or a replan) but kept whole, so that a replan can add
    them when the window has room."""

    @model_validator(mode="after")
    def _unique_ids(self) -> Self:
        seen: set[str] = set()
        for i, run in enumerate(self.runs):
            if run.id in seen:
                raise ValueError(f"@runs[{i}].id: run id {run.id} is used twice")
            seen.add(run.id)
        rules.check_plan_runs(self.runs, seen, self.campaign.cards)
        if self.held:
            rules.check_held_runs(self.held, seen, self.campaign.cards)
        return self


def plan_id(plan: Plan) -> str:
    """The plan's id: its campaign's id, and the revision after a replan."""
    return plan.campaign.id if not plan.revision else f"{plan.campaign.id}-r{plan.revision}"


def with_overrides(plan: Plan, lines: list[str]) -> Plan:
    """`plan` with the command line's overrides of its preset named in its assumptions."""
    if not lines:
        return plan
    return plan.model_copy(update={"assumptions": plan.assumptions.model_copy(
        update={"overrides": [*plan.assumptions.overrides, *lines]})})

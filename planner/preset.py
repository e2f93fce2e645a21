"""The preset schema: a campaign to plan, as read from TOML.

Every model is strict: unknown keys are refused and each field carries a docstring that
becomes its JSON Schema description and its help text.
"""

from __future__ import annotations

import re
import string
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from planner.costs import Figure
from planner.model import Strict

FactorValue = str | int | float | bool
Kind = Literal["ablation", "embedding", "adaptation"]
_SLUG = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"

TRAINING_PLACEHOLDERS = frozenset(
    {"run_id", "campaign_id", "variant", "seed", "factor", "value", "factors", "overrides",
     "checkpoint_dir", "resume", "export_name", "steps", "micro_batch", "accumulation",
     "effective_batch", "base_model", "trained_parameters", "dataset"}
)
EMBEDDING_PLACEHOLDERS = frozenset(
    {"run_id", "campaign_id", "version", "shard", "shards", "out_dir", "resume", "model",
     "tokenizer", "truncation", "pooling", "normalization", "batching", "batch_size",
     "token_budget"}
)


def template_fields(template: str) -> set[str]:
    """Top-level placeholder names used in a `str.format` template."""
    names: set[str] = set()
    for _, name, _, _ in string.Formatter().parse(template):
        if name is not None:
            names.add(re.split(r"[.\[]", name, maxsplit=1)[0])
    return names


def _check_template(template: str, allowed: frozenset[str]) -> str:
    try:
        used = template_fields(template)
    except ValueError as exc:
        raise ValueError(f"malformed placeholder: {exc}") from None
    unknown = sorted(used - allowed)
    if "" in used:
        raise ValueError("empty placeholder {} (name one of: " + ", ".join(sorted(allowed)) + ")")
    if unknown:
        raise ValueError(
            f"unknown placeholder {{{unknown[0]}}}; known: " + ", ".join(sorted(allowed))
        )
    return template


class Campaign(Strict):
    """What is rented, for how long, and what kind of campaign runs on it."""

    name: str = Field(pattern=_SLUG)
    """Campaign name: letters, digits, `.`, `_` and `-`."""
    id: str | None = Field(default=None, pattern=_SLUG)
    """Stable campaign id carried by every run id; derived from the name and preset when unset."""
    kind: Kind
    """`ablation`, `embedding` or `adaptation`; the preset's matching section describes it."""
    window_days: Literal[3, 7, 30] | None = None
    """Rental window in days: 3, 7 or 30. Give this or `window_hours`."""
    window_hours: float | None = Field(default=None, gt=0)
    """A custom rental window in hours, instead of `window_days`."""
    card: str
    """Card model, a catalog key (see `campaign-planner cards`)."""
    cards: int = Field(ge=1, le=4096)
    """Number of cards rented."""
    price_per_card_hour: float | None = Field(default=None, ge=0)
    """Price of one card-hour, when known; overrides a price in the catalog."""
    currency: str = "USD"
    """Currency of the price."""

    @model_validator(mode="after")
    def _one_window(self) -> Self:
        if (self.window_days is None) == (self.window_hours is None):
            raise ValueError(
                "@window_days: give exactly one of `window_days` (3, 7 or 30) or `window_hours`")
        return self

    @property
    def hours(self) -> float:
        """The rental window in hours."""
        return self.window_hours if self.window_hours is not None else 24.0 * self.window_days  # type: ignore[operator]


class Overheads(Strict):
    """Time the window pays for besides the work itself."""

    stack_check_hours: float = Field(default=1.0, ge=0)
    """Reserved at the start of the window to check drivers, CUDA, PyTorch and a resume."""
    startup_minutes: float = Field(default=5.0, ge=0)
    """Per run: process start, data loading, model build."""
    eval_every_steps: int = Field(default=0, ge=0)
    """Evaluate every this many steps (0: only once, at the end of the run)."""
    eval_minutes: float = Field(default=0.0, ge=0)
    """Duration of one evaluation."""
    checkpoint_every_steps: int = Field(default=0, ge=0)
    """Write a checkpoint every this many steps (0: only at the end of the run)."""
    checkpoint_write_minutes: float = Field(default=0.0, ge=0)
    """Duration of one checkpoint write."""
    safety_margin_hours: float = Field(default=0.0, ge=0)
    """Reserved at the end of the window: nothing is planned to end inside it."""
    memory_margin_gib: float = Field(default=2.0, ge=0)
    """Device memory kept free below the card's size (allocator fragmentation, spikes)."""


class Costed(Strict):
    """Step time and peak memory of one configuration, each with provenance."""

    step_time_s: Figure
    """Seconds per optimizer step (micro-batch × accumulation samples per card)."""
    peak_memory_gib: Figure
    """Peak device memory per card at the workload's micro-batch, in GiB."""
    memory_per_sample_gib: float | None = Field(default=None, gt=0)
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
        return v


class Variant(Costed):
    """One ablation: the baseline with exactly one factor changed."""

    name: str = Field(pattern=_SLUG)
    """Variant name, used in run ids."""
    changes: dict[str, FactorValue]
    """The factor this variant changes and its new value, e.g. `{ loss = "ce" }`."""
    waive_one_factor: str = ""
    """A reason to accept a variant that breaks the one-factor rule; the break becomes a
    warning carried into the plan instead of an error."""


class Robustness(Strict):
    """An extra evaluation run on trained checkpoints, scheduled after all training."""

    name: str = Field(pattern=_SLUG)
    """Control name, used in run ids."""
    eval_minutes: float = Field(gt=0)
    """Duration of this evaluation for one trained run."""
    applies_to: list[str] = []
    """Variant names it evaluates (`baseline` for the baseline); empty means all."""
    command: str
    """Command for one evaluation; {checkpoint_dir} and {resume} name the trained run's
    checkpoints, other placeholders as for training runs."""

    @field_validator("command")
    @classmethod
    def _template(cls, v: str) -> str:
        return _check_template(v, TRAINING_PLACEHOLDERS)


class Training(Strict):
    """An ablation matrix: a kept baseline, one-factor variants, repeated over seeds."""

    steps: int = Field(ge=1)
    """Optimizer steps per run."""
    seeds: list[int] = Field(min_length=1)
    """Seeds; the whole matrix repeats once per seed, in this order."""
    micro_batch: int = Field(ge=1)
    """Samples per card per forward pass."""
    accumulation: int = Field(default=1, ge=1)
    """Micro-batches accumulated per optimizer step."""
    cards_per_run: int = Field(default=1, ge=1)
    """Cards one run uses (data parallel)."""
    effective_batch: int | None = Field(default=None, ge=1)
    """The rule every variant keeps: micro_batch × accumulation × cards_per_run. Optional;
    when given it must equal that product."""
    baseline: Baseline
    """The kept baseline."""
    variants: list[Variant] = []
    """The variants, written down before the first launch."""
    robustness: list[Robustness] = []
    """Robustness controls: extra evaluations, scheduled last."""
    max_retries: int = Field(default=1, ge=0)
    """How often the executor retries a failed run before marking it failed."""
    command: str
    """Command for one run, with placeholders such as {run_id}, {seed}, {overrides},
    {factors[name]}, {checkpoint_dir}, {resume}, {micro_batch}, {accumulation}."""
    checkpoint_root: str = "checkpoints"
    """Folder holding one checkpoint folder per run, named by run id."""
    export_root: str = "exports"
    """Folder holding final exports, named by run id."""

    @field_validator("seeds")
    @classmethod
    def _distinct(cls, v: list[int]) -> list[int]:
        seen: set[int] = set()
        for s in v:
            if s in seen:
                raise ValueError(f"seed {s} is listed twice; seeds must be distinct")
            seen.add(s)
        return v

    @field_validator("command")
    @classmethod
    def _template(cls, v: str) -> str:
        return _check_template(v, TRAINING_PLACEHOLDERS)

    @model_validator(mode="after")
    def _batch_rule(self) -> Self:
        product = self.micro_batch * self.accumulation * self.cards_per_run
        if self.effective_batch is not None and self.effective_batch != product:
            raise ValueError(
                f"@effective_batch: {self.effective_batch} != micro_batch × accumulation × "
                f"cards_per_run = {self.micro_batch} × {self.accumulation} × "
                f"{self.cards_per_run} = {product}"
            )
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


class TokenLengths(Strict):
    """Summary of the corpus's token lengths (per document, before truncation)."""

    min: int = Field(ge=0)
    """Shortest document, in tokens."""
    p50: int = Field(ge=0)
    """Median length."""
    p90: int = Field(ge=0)
    """90th percentile."""
    p99: int = Field(ge=0)
    """99th percentile."""
    max: int = Field(ge=1)
    """Longest document."""
    source: Literal["entered", "scanned", "approximate"] = "entered"
    """`entered` by hand, `scanned` with the real tokenizer, or `approximate` (a declared
    approximation of token counts)."""

    @model_validator(mode="after")
    def _ordered(self) -> Self:
        q = [self.min, self.p50, self.p90, self.p99, self.max]
        if q != sorted(q):
            raise ValueError("@p50: lengths must not decrease: min ≤ p50 ≤ p90 ≤ p99 ≤ max")
        return self


class Embedding(Strict):
    """An embedding corpus: one fixed model and preprocessing, run over every document."""

    documents: int = Field(ge=1)
    """Documents in the corpus."""
    lengths: TokenLengths
    """Token-length summary of the corpus."""
    model: str
    """The embedding model, fixed for the whole campaign."""
    tokenizer: str
    """The tokenizer, fixed for the whole campaign."""
    truncation_tokens: int = Field(ge=1)
    """Documents are cut to this many tokens."""
    pooling: Literal["mean", "cls", "max", "last"]
    """How token vectors become one vector."""
    normalization: Literal["l2", "none"]
    """Vector normalization."""
    batching: Literal["original", "length-grouped"] = "length-grouped"
    """Original order with a fixed batch size, or grouped by length under a token budget."""
    batch_size: int = Field(default=64, ge=1)
    """Documents per batch in original order."""
    token_budget: int = Field(default=65536, ge=1)
    """Padded tokens per batch when grouped by length (padded length × batch ≤ budget)."""
    throughput_tokens_per_s: Figure
    """Padded tokens per second on one card, with provenance."""
    versions: int = Field(default=1, ge=1)
    """Representation versions wanted: full passes over the corpus, each with its settings fixed."""
    command: str = "campaign-planner embed {plan} --shard {shard} --version {version}"
    """Command for one shard of one version; placeholders such as {run_id}, {shard},
    {version}, {out_dir}."""
    export_root: str = "embeddings"
    """Folder holding one folder per version, one file per shard."""

    @field_validator("command")
    @classmethod
    def _template(cls, v: str) -> str:
        return _check_template(v, EMBEDDING_PLACEHOLDERS | {"plan"})

    @model_validator(mode="after")
    def _budget(self) -> Self:
        if self.batching == "length-grouped" and self.token_budget < min(
            self.lengths.max, self.truncation_tokens
        ):
            raise ValueError(
                f"@token_budget: {self.token_budget} cannot hold the longest document "
                f"({min(self.lengths.max, self.truncation_tokens)} tokens after truncation)"
            )
        return self


class Contact(Strict):
    """Who the order is for."""

    name: str = Field(min_length=1)
    """Customer name."""
    email: str
    """Customer email address."""

    @field_validator("email")
    @classmethod
    def _email(cls, v: str) -> str:
        if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}", v):
            raise ValueError(f"not a valid email address: {v!r}")
        return v


class OrderSpec(Strict):
    """The software environment wanted on the rented machine, and who orders."""

    image: str = "ubuntu-22.04"
    """Operating-system image."""
    cuda: str = Field(default="12.6", pattern=r"^\d+\.\d+$")
    """CUDA version wanted."""
    pytorch: str = Field(default="2.7", pattern=r"^\d+\.\d+(\.\d+)?$")
    """PyTorch version wanted."""
    packages: list[str] = []
    """Extra packages to install."""
    contact: Contact | None = None
    """Customer contact; without it the order is written as a draft."""


class Preset(Strict):
    """A campaign to plan: the rental, its overheads, its workload, and the order."""

    campaign: Campaign
    """The rental and the campaign kind."""
    overheads: Overheads = Overheads()
    """Time the window pays for besides the work."""
    ablation: Training | None = None
    """The workload when `campaign.kind = "ablation"`."""
    adaptation: Adaptation | None = None
    """The workload when `campaign.kind = "adaptation"`."""
    embedding: Embedding | None = None
    """The workload when `campaign.kind = "embedding"`."""
    order: OrderSpec = OrderSpec()
    """The software environment and contact for the order."""

    @model_validator(mode="after")
    def _section_matches_kind(self) -> Self:
        kind = self.campaign.kind
        present = [k for k in ("ablation", "adaptation", "embedding") if getattr(self, k)]
        if kind not in present:
            raise ValueError(
                f"@campaign.kind: is {kind!r} but the preset has no [{kind}] section"
            )
        others = [k for k in present if k != kind]
        if others:
            raise ValueError(
                f"@campaign.kind: is {kind!r} but the preset also has a [{others[0]}] section"
            )
        return self

    @property
    def training(self) -> Training | None:
        """The training workload (ablation or adaptation), if any."""
        return self.ablation or self.adaptation

"""`measurements.toml`: what `campaign-planner measure` found, and where it found it.

Torch-free: the planner reads this file to replace a preset's entered figures with measured
(or scaled) ones, each labelled with its provenance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError

from planner.errors import InputError, from_validation
from planner.spec import bounds
from planner.spec.base import Strict
from planner.spec.catalog import Dtype
from planner.spec.costs import MeasuredFrom
from planner.tomlio import dumps, read_toml

FORMAT: Literal[1] = 1
Value = str | int | float | bool

HEADER = ("# campaign-planner measurements: step time and peak memory per configuration,\n"
          "# measured on the device below. Plan with them:\n"
          "#   campaign-planner --preset PRESET --measurements THIS_FILE\n\n")


class Device(Strict):
    """The device the measurement ran on."""

    name: str = Field(min_length=1)
    """Device name as the driver reports it (CPU model for CPU runs)."""
    kind: Literal["cpu", "cuda"]
    """`cpu` or `cuda`."""
    card: str = ""
    """Catalog key of the card, when the device is a catalog card model."""
    compute_capability: str = ""
    """CUDA compute capability, e.g. "8.6" (empty on CPU)."""
    memory_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """Device memory in GiB (CUDA)."""
    threads: int | None = Field(default=None, ge=0, le=1 << 20)
    """CPU threads torch used (CPU runs)."""


class Workload(Strict):
    """The exact workload measured: the preset's measurement section and batch settings."""

    source: Literal["reference", "factory", "trial"]
    """A built-in reference workload, the user's factory, or a trial of the preset's own
    command (`campaign-planner trial`)."""
    spec: dict[str, Any]
    """The preset's measurement section, as it was."""
    micro_batch: int = Field(ge=1, le=bounds.BATCH)
    """Micro-batch of the preset."""
    accumulation: int = Field(ge=1, le=bounds.BATCH)
    """Accumulation of the preset."""
    cards_per_run: int = Field(default=1, ge=1, le=4096)
    """Cards per run of the preset."""
    seq_len: int | None = Field(default=None, ge=1, le=bounds.TOKENS)
    """Sequence length of every sample (reference workloads): the longest the run sees."""
    fingerprint: str
    """SHA-256 of the above and every configuration's factors."""


class StepTime(Strict):
    """Timed optimizer steps (training) or batches (embedding)."""

    median_s: float = Field(gt=0, le=bounds.MEASURED_SECONDS)
    """Median seconds per step."""
    p10_s: float = Field(gt=0, le=bounds.MEASURED_SECONDS)
    """10th percentile."""
    p90_s: float = Field(gt=0, le=bounds.MEASURED_SECONDS)
    """90th percentile."""
    steps: int = Field(ge=1, le=bounds.STEPS)
    """Steps timed."""


class Memory(Strict):
    """Peak device memory of one step at the chosen micro-batch."""

    method: Literal["cuda", "fake-tensor", "reported", "nvml"]
    """`cuda`: the allocator's peak statistics on the device; `fake-tensor`: an estimate from
    one step traced under FakeTensorMode with torch's MemTracker (no GPU needed);
    `reported`: the `peak_memory_bytes` a trialled command reported in its progress file;
    `nvml`: the card's used memory sampled with NVML during a trial."""
    peak_gib: float = Field(gt=0, le=bounds.GIB)
    """The figure planned on: reserved memory (cuda), the tracked peak (fake-tensor), the
    reported peak (reported) or the most used memory seen on a card of the run (nvml)."""
    allocated_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """`torch.cuda.max_memory_allocated` (cuda)."""
    reserved_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """`torch.cuda.max_memory_reserved` (cuda)."""
    num_alloc_retries: int | None = Field(default=None, ge=0, le=bounds.STEPS)
    """Allocator retries after a failed allocation (cuda): above 0, memory is tight."""
    weights_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """Parameters and buffers (fake-tensor)."""
    gradients_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """Gradients (fake-tensor)."""
    optimizer_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """Optimizer states (fake-tensor)."""
    activations_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """Activations and backward temporaries at their peak (fake-tensor)."""
    per_sample_gib: float | None = Field(default=None, ge=0, le=bounds.GIB)
    """How much the peak grows per micro-batch sample (from two micro-batches)."""


class TrialCost(Strict):
    """What a trial of the command spent besides its timed steps."""

    startup_s: float | None = Field(default=None, ge=0, le=bounds.MEASURED_SECONDS)
    """From the process's start to its first progress report (None: it reported none)."""
    warmup_s: float = Field(default=0.0, ge=0, le=bounds.MEASURED_SECONDS)
    """From the first report to the start of the timed steps (warm-up, compilation)."""
    warmup_steps: int = Field(default=0, ge=0, le=bounds.STEPS)
    """Steps done before the timed ones."""
    overhead_s: float | None = Field(default=None, ge=0, le=bounds.MEASURED_SECONDS)
    """What a run pays once: the time to the first timed step less its steps before it at
    the median step time. A plan from the file charges it as each run's start-up."""
    wall_s: float = Field(default=0.0, ge=0, le=bounds.MEASURED_SECONDS)
    """The configuration's whole trial, from its start to its stop."""
    exit_code: int | None = None
    """How the command ended (negative: killed by that signal; None: not known)."""
    log: str = ""
    """The command's output, kept in the trial's scratch folder."""


class BatchChoice(Strict):
    """The largest micro-batch that fits the target card, and the choice made from it."""

    card: str
    """Catalog key of the target card searched for."""
    budget_gib: float = Field(le=bounds.GIB)
    """Memory a run may use there: usable memory less the CUDA context and the preset's
    margin (less DDP's buckets for a run on several cards)."""
    method: Literal["cuda", "fake-tensor"]
    """How each candidate was judged: a real step under a memory cap, or the estimate."""
    largest: int = Field(ge=0, le=bounds.BATCH)
    """Largest micro-batch that fits (0: not even one sample)."""
    limit: int = Field(ge=0, le=bounds.BATCH)
    """The search stopped growing here (the per-card batch): `largest` may be higher."""
    probes: int = Field(ge=0, le=bounds.BATCH)
    """Candidates tried."""
    oom_recoveries: int = 0
    """Out-of-memory errors recovered from during the search."""
    micro_batch: int | None = None
    """Micro-batch chosen (a divisor of the per-card batch, at most the preset's)."""
    accumulation: int | None = None
    """Accumulation that keeps the effective batch."""
    reduced: bool = False
    """Whether the choice is below the preset's micro-batch."""


class ConfigMeasurement(Strict):
    """One configuration (baseline or variant, or an embedding batch)."""

    config: str
    """`baseline`, a variant's name, or `embedding`."""
    factors: dict[str, Value] = {}
    """The configuration's factors (training)."""
    same_as: str = ""
    """Measured once for another configuration whose workload is identical."""
    ignored_factors: list[str] = []
    """Factors that do not change the reference workload's step."""
    params: int = Field(ge=0, le=bounds.PARAMS)
    """Parameters of the model."""
    trainable_params: int = Field(ge=0, le=bounds.PARAMS)
    """Parameters that receive gradients."""
    micro_batch: int = Field(ge=1, le=bounds.BATCH)
    """Micro-batch the step was timed and the memory taken at."""
    accumulation: int = Field(default=1, ge=1, le=bounds.BATCH)
    """Micro-batches per timed optimizer step."""
    tokens_per_step: int | None = Field(default=None, ge=0, le=bounds.PARAMS)
    """Tokens per timed step (reference workloads and embeddings)."""
    step_time: StepTime | None = None
    """Timing; absent when the configuration could not be timed (does not fit, cancelled)."""
    memory: Memory | None = None
    """Peak memory (absent where a trial's command reported none and no card was read)."""
    batch: BatchChoice | None = None
    """The micro-batch search for the target card (training)."""
    flops_per_step: float = Field(ge=0, le=bounds.FLOPS)
    """FLOPs of one timed step as the device runs them (the recompute of activation
    checkpointing included), counted with FlopCounterMode on the meta device."""
    achieved_tflops: float | None = None
    """FLOPs per step ÷ median step time."""
    mfu: float | None = None
    """Achieved ÷ the device's dense peak for the dtype (unknown on CPU); model FLOPs, so
    the recompute of activation checkpointing is not counted."""
    model_flops_per_step: float | None = None
    """FLOPs of the model alone, without the recompute of activation checkpointing (the
    MFU numerator); set only where it differs from `flops_per_step`."""
    hfu: float | None = None
    """Hardware FLOPs utilization: `flops_per_step` (recompute included) ÷ median ÷ the
    dense peak; set only where it differs from `mfu`."""
    flags: list[str] = []
    """Things to look at: MFU above 100 % or below 5 %, allocator retries, a partial run."""
    outcome: Literal["measured", "crashed", "out-of-memory", "no-progress"] = "measured"
    """How a trial of the configuration went: anything but `measured` gives no figure."""
    reason: str = ""
    """Why a trialled configuration gave no figure, in words."""
    trial: TrialCost | None = None
    """What its trial cost (trials only)."""


class Measurements(Strict):
    """The content of `measurements.toml`."""

    format: Literal[1] = FORMAT
    """File format version."""
    preset: str
    """Campaign name of the preset measured."""
    kind: Literal["ablation", "adaptation", "embedding"]
    """Campaign kind."""
    date: str
    """When it was measured (ISO 8601)."""
    torch: str
    """torch version."""
    cuda: str = ""
    """CUDA version torch was built with (empty for a CPU build)."""
    dtype: Dtype
    """Precision measured."""
    target_card: str
    """Catalog key of the card the micro-batch search sized for."""
    device: Device
    """Where it ran."""
    workload: Workload
    """What ran."""
    partial: bool = False
    """Stopped early (Ctrl-C): some configurations are missing or have fewer steps."""
    command: str = ""
    """The command that produced the file."""
    configs: list[ConfigMeasurement] = []
    """Per configuration."""
    file: str = Field(default="", exclude=True)
    """Where the file was read from (not written)."""

    def by_config(self) -> dict[str, ConfigMeasurement]:
        """Configurations by name."""
        return {c.config: c for c in self.configs}


def measurements_toml(m: Measurements) -> str:
    """The text of `measurements.toml`."""
    return HEADER + dumps(m.model_dump(mode="json"))


def load_measurements(path: str | Path) -> Measurements:
    """Read `measurements.toml`; any problem is an InputError naming the file and field."""
    data = read_toml(path)
    if isinstance(data.get("format"), int) and data["format"] != FORMAT:
        raise InputError(f"format {data['format']} is not one this version reads ({FORMAT}); "
                         "measure again", file=path, field="format")
    try:
        m = Measurements.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, path) from None
    return m.model_copy(update={"file": str(path)})


def provenance(m: Measurements) -> MeasuredFrom:
    """The plan's record of a measurements file."""
    spec = m.workload.spec
    what = (f"reference {spec.get('reference')}" if m.workload.source == "reference"
            else "trial of the command" if m.workload.source == "trial"
            else f"factory {spec.get('factory')}")
    if m.workload.source == "reference" and spec.get("reference") == "hf":
        config = spec.get("config")
        what = (f"transformers config {config}" if isinstance(config, str) else
                f"transformers {(config or {}).get('model_type', '?')} config (inline)")
    return MeasuredFrom(file=m.file, device=m.device.name, device_kind=m.device.kind,
                        compute_capability=m.device.compute_capability, torch=m.torch,
                        cuda=m.cuda, dtype=m.dtype, date=m.date, workload=what,
                        partial=m.partial)

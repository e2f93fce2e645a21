"""The preset's measurement section: what `campaign-planner measure` builds, runs and times.

Three ways to describe the workload:

- a **built-in reference** (`reference = "transformer"` for a training step of a decoder
  language model, `reference = "encoder"` for the forward pass of an embedding encoder),
  sized by a few numbers: `d_model`, `layers`, `heads`, `seq_len`, `vocab`, `ffn_mult`,
  `dtype`, `optimizer`;
- **any transformers architecture** (`reference = "hf"`): `config` names a `config.json`
  beside the preset, or is an inline table with `model_type` and its fields; the model is
  built from it with random weights (see `planner.measure.hf_config` for how factors map
  onto its fields);
- **your own model**: `factory = "package.module:function"` (see `planner.measure.workloads`
  for the protocol: it receives the configuration's factors and returns the model, the
  optimizer and a batch maker).

Weights are random: timing and memory do not need trained ones, and nothing is downloaded.

How a configuration's factors map onto the reference transformer (baseline factors, then a
variant's change on top; names are matched exactly):

- `d_model`, `layers`, `heads`, `seq_len`, `vocab`, `ffn_mult`, `optimizer`: override
  that field;
- `norm` (`layernorm`, `rmsnorm`): the normalization layers;
- `activation` (`gelu`, `relu`, `silu`, `swiglu`): the MLP; swiglu has three matrices of
  hidden size 2/3 × ffn_mult × d_model;
- `positional` (`learned`, `rope`, `alibi`, `none`): the position encoding; alibi adds an
  S×S bias per head to attention;
- `activation_checkpointing` (true / false): recompute each block in the backward pass;
- `aux_loss` (true / false): an auxiliary language-model head on the middle layer;
- `lora_rank` (integer, 0 = none): low-rank adapters of this rank, base weights frozen;
- `lora_targets` (`attn`, `mlp`, `attn+mlp`; default `attn`): the matrices with adapters.

Any other factor (data, learning rate, filters …) does not change the cost of a step: the
configuration is measured as the same workload as the one it matches and says so.
"""

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from planner.errors import InputError
from planner.spec.base import Strict
from planner.spec.catalog import Dtype

OptionValue = str | int | float | bool
FACTORY = r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$"
Norm = Literal["layernorm", "rmsnorm"]
Activation = Literal["gelu", "relu", "silu", "swiglu"]
Positional = Literal["learned", "rope", "alibi", "none"]
Optimizer = Literal["adamw", "adam", "sgd"]
BUILT_IN = ("transformer", "encoder")
"""The built-in references, sized by the section's own fields (the analytic tier computes
on them)."""
REFERENCE_ONLY = ("d_model", "layers", "heads", "vocab", "ffn_mult", "norm", "activation",
                  "positional")
"""Sizes of the built-in references, which `reference = "hf"` takes from its config."""


def _unset(value: object) -> bool:
    return value is None or value == []


class MeasureSpec(Strict):
    """How to build the workload `campaign-planner measure` times: a built-in reference
    or your own factory."""

    reference: Literal["transformer", "encoder", "hf"] | None = None
    """`transformer`: one training step of a decoder language model; `encoder`: the forward
    pass of an embedding encoder; `hf`: the transformers model of `config`, built with random
    weights (a training step, or an embedding campaign's forward pass). Give this or
    `factory`."""
    # A section without `config` dumps as it did before these fields existed: the campaign
    # id and the measurement fingerprint hash this dump.
    config: str | dict[str, Any] | None = Field(default=None, exclude_if=_unset)
    """`reference = "hf"`: a transformers `config.json`, relative to the preset's folder
    (a plain file inside it: no links, no `..`), or an inline table with `model_type` and
    the fields to set (`{ model_type = "llama", hidden_size = 2048, ... }`)."""
    ignore_factors: list[str] = Field(default=[], exclude_if=_unset)
    """`reference = "hf"`: factors that do not change a step (learning rate, data …),
    measured as the same workload. Any other factor must be a field of the config."""
    factory: str | None = Field(default=None, pattern=FACTORY)
    """Your own model: `package.module:function` (the factory protocol: docs/measuring.md)."""
    d_model: int = Field(default=256, ge=8)
    """Reference: hidden size."""
    layers: int = Field(default=4, ge=1)
    """Reference: transformer blocks."""
    heads: int = Field(default=4, ge=1)
    """Reference: attention heads (must divide d_model)."""
    seq_len: int = Field(default=512, ge=2)
    """Reference: sequence length of every sample, the longest the run will see (memory is
    sized on the worst case, never the average). Embedding campaigns use the truncation."""
    vocab: int = Field(default=8192, ge=2)
    """Reference: vocabulary size."""
    ffn_mult: float = Field(default=4.0, gt=0)
    """Reference: MLP hidden size as a multiple of d_model."""
    norm: Norm = "layernorm"
    """Reference: normalization when no factor sets it."""
    activation: Activation = "gelu"
    """Reference: MLP activation when no factor sets it."""
    positional: Positional = "learned"
    """Reference: position encoding when no factor sets it."""
    dtype: Dtype = "bf16"
    """Precision of the step: fp32, tf32, or bf16 / fp16 autocast over fp32 weights."""
    optimizer: Optimizer = "adamw"
    """Optimizer whose states are measured (training)."""
    options: dict[str, OptionValue] = {}
    """Extra keyword arguments passed to your factory as they are."""
    warmup_steps: int = Field(default=2, ge=0)
    """Steps run before timing (allocator, kernel selection, caches)."""
    steps: int = Field(default=10, ge=1)
    """Timed steps per configuration (`measure --steps` overrides it)."""

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        if (self.reference is None) == (self.factory is None):
            raise ValueError("@reference: give exactly one of `reference` or `factory`")
        if (self.reference == "hf") != (self.config is not None):
            raise ValueError("@config: give `config` exactly when reference = \"hf\" (a "
                             "config.json beside the preset, or a table with model_type)")
        if self.reference == "hf":
            sizes = sorted(set(REFERENCE_ONLY) & self.model_fields_set)
            if sizes:
                raise ValueError(f"@{sizes[0]}: reference = \"hf\" takes its sizes from "
                                 "`config`: set the transformers field there")
            if isinstance(self.config, str) and (not self.config.strip() or "\0" in self.config
                                                 or len(self.config) > 1024):
                raise ValueError("@config: must name a file: not empty, without NUL, at most "
                                 "1024 characters")
        elif self.ignore_factors:
            raise ValueError("@ignore_factors: only for reference = \"hf\"; the built-in "
                             "references ignore factors they do not know")
        if self.reference in ("transformer", "encoder") and self.d_model % self.heads:
            raise ValueError(f"@heads: {self.heads} heads do not divide d_model {self.d_model}")
        return self


SETTING_FIELDS = ("d_model", "layers", "heads", "seq_len", "vocab", "ffn_mult", "norm",
                  "activation", "positional", "optimizer")
_CHOICES: dict[str, tuple[Any, ...]] = {
    "norm": Norm.__args__,  # type: ignore[attr-defined]
    "activation": Activation.__args__,  # type: ignore[attr-defined]
    "positional": Positional.__args__,  # type: ignore[attr-defined]
    "optimizer": Optimizer.__args__,  # type: ignore[attr-defined]
    "lora_targets": ("attn", "mlp", "attn+mlp"),
}
_INTS = ("d_model", "layers", "heads", "seq_len", "vocab", "lora_rank")


def resolve_reference(spec: MeasureSpec, factors: dict[str, OptionValue], *,
                      source: str | None = None, field: str = "") -> tuple[dict[str, Any],
                                                                           list[str]]:
    """The reference settings one configuration runs with, and the factors that do not
    change the step. Raises InputError naming `field` for a value the reference cannot take.
    """
    settings: dict[str, Any] = {k: getattr(spec, k) for k in SETTING_FIELDS}
    settings["dtype"] = spec.dtype
    settings.update(activation_checkpointing=False, aux_loss=False, lora_rank=0,
                    lora_targets="attn")
    ignored: list[str] = []
    for name, value in factors.items():
        if name not in settings or name == "dtype":
            ignored.append(name)
            continue
        where = f"{field}.{name}" if field else name
        if name in _CHOICES and value not in _CHOICES[name]:
            raise InputError(f"{value!r} is not a reference {name}; one of "
                             f"{', '.join(map(str, _CHOICES[name]))}", file=source, field=where)
        if name in _INTS and (isinstance(value, bool) or not isinstance(value, int)
                              or value < 0):
            raise InputError(f"the reference needs a non-negative integer, got {value!r}",
                             file=source, field=where)
        if name in ("activation_checkpointing", "aux_loss") and not isinstance(value, bool):
            raise InputError(f"the reference needs true or false, got {value!r}", file=source,
                             field=where)
        if name == "ffn_mult" and (isinstance(value, bool) or not isinstance(value, int | float)
                                   or value <= 0):
            raise InputError(f"the reference needs a positive number, got {value!r}",
                             file=source, field=where)
        settings[name] = value
    if settings["d_model"] % max(settings["heads"], 1) or settings["heads"] < 1:
        raise InputError(f"{settings['heads']} heads do not divide d_model "
                         f"{settings['d_model']}", file=source, field=field or "measure")
    return settings, ignored

"""`reference = "hf"`: the transformers config a preset names, read safely, and each
configuration's factors set on it. transformers is imported only inside the functions that
check a config; the file is read by `planner.spec.hf_file`.

`config` is a `config.json` relative to the preset's folder (or a folder holding one): a
plain file inside it, reached without links or `..`, read without following a link; or an
inline table with `model_type` and its fields. Its `model_type` must be one this version of
transformers ships (no remote code is ever run) and every field must be one its config class
knows (keys that transformers itself reads and converts, such as `rope_theta`, are kept).

How a configuration's factors map (the baseline's, then a variant's change on top):

- a field of the config class (`num_key_value_heads`, `hidden_act`, `num_hidden_layers`,
  `intermediate_size`, …): set on the config before the model is built;
- `attn_implementation` (`eager`, `sdpa`, `flash_attention_2`, …): passed to `from_config`;
- `gradient_checkpointing` (or `activation_checkpointing`; true / false): activation
  checkpointing of the model's layers;
- `seq_len` (tokens per sample) and `optimizer` (adamw, adam, sgd);
- `dtype`: the measurement section's `dtype` is used, as with the built-in references;
- a factor named in `ignore_factors` does not change the step (learning rate, data …);
- any other factor is an error naming it.

Weights are always built in fp32 (the step runs under the section's dtype by autocast, as
the built-in references do), whatever the config's own `dtype`.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from planner.errors import InputError
from planner.spec.hf_file import locate, preset_folder, read_config
from planner.spec.measure import MeasureSpec, Optimizer

CHECKPOINTING = ("gradient_checkpointing", "activation_checkpointing")
SPECIAL = ("attn_implementation", *CHECKPOINTING, "seq_len", "optimizer")
"""Factors that are not config fields but change the step."""
_OPTIMIZERS: tuple[str, ...] = Optimizer.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Where:
    """Where a value came from, for errors: the file and the field to name."""

    file: str | None
    field: str


@dataclass(frozen=True)
class LoadedConfig:
    """A config as the preset gives it: its fields and where each one is named."""

    data: dict[str, Any]
    file: str | None
    """The file to name: the config.json, or the preset for an inline table."""
    prefix: str
    """Prefix of a field's name in errors (`ablation.measure.config.` inline, "" in a file)."""
    at: Where
    """The preset's `config` field."""

    def where(self, name: str) -> Where:
        """Where field `name` of the config is named."""
        return Where(self.file, f"{self.prefix}{name}")


@dataclass(frozen=True)
class HfSettings:
    """Everything one configuration's model and step are built from."""

    model_type: str
    fields: dict[str, Any]
    """The config's fields (without `model_type`), the factors applied."""
    attn_implementation: str | None
    checkpointing: bool
    seq_len: int
    optimizer: str
    vocab: int
    where: Where
    """What to name when transformers cannot build the model."""
    origins: dict[str, Where] = field(default_factory=dict, compare=False)

    def key(self) -> str:
        """Identical settings are the same workload, measured once."""
        return json.dumps({"model_type": self.model_type, "fields": self.fields,
                           "attn": self.attn_implementation, "ckpt": self.checkpointing,
                           "seq_len": self.seq_len, "optimizer": self.optimizer},
                          sort_keys=True, default=str)


def load_config(spec: MeasureSpec, source: str | None, where: str) -> LoadedConfig:
    """The section's `config`: the inline table, or the JSON file it names."""
    assert spec.config is not None
    at = Where(source, f"{where}.config")
    if isinstance(spec.config, dict):
        return LoadedConfig(dict(spec.config), source, f"{at.field}.", at)
    path = locate(preset_folder(source), spec.config, at.file, at.field)
    return LoadedConfig(read_config(path)[0], str(path), "", at)


def config_class(loaded: LoadedConfig) -> tuple[str, type]:
    """The model type and the transformers config class it names."""
    from transformers import CONFIG_MAPPING, __version__

    model_type = loaded.data.get("model_type")
    at = loaded.where("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise InputError("required: the transformers model type (`llama`, `qwen2`, `bert` …)",
                         file=at.file, field=at.field)
    if "auto_map" in loaded.data:
        at = loaded.where("auto_map")
        raise InputError("names remote code, which is never run: give a model_type this "
                         f"version of transformers ({__version__}) ships", file=at.file,
                         field=at.field)
    if model_type not in CONFIG_MAPPING:
        close = difflib.get_close_matches(model_type, list(CONFIG_MAPPING.keys()), 3)
        hint = f"; did you mean {', '.join(close)}?" if close else ""
        raise InputError(f"{model_type!r} is not a model type of transformers {__version__}"
                         f"{hint}", file=at.file, field=at.field)
    return model_type, CONFIG_MAPPING[model_type]


def known_fields(cls: type) -> set[str]:
    """The fields a config class declares, and the names it maps onto them."""
    import dataclasses
    import inspect

    names = ({f.name for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls)
             else set(inspect.signature(cls).parameters))
    return names | set(getattr(cls, "attribute_map", {}) or {})


def make_config(model_type: str, fields: dict[str, Any], origins: dict[str, Where],
                fallback: Where) -> Any:
    """The transformers config; a value its class refuses is an error naming that field."""
    from transformers import AutoConfig

    try:
        return AutoConfig.for_model(model_type, **fields)
    except Exception as exc:  # transformers' validation of a value: bad input
        text = str(exc)
        m = re.search(r"field '([^']+)'", text)
        lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
        message = lines[-1] if lines else type(exc).__name__
        at = origins.get(m[1], fallback) if m else fallback
        raise InputError(f"transformers refuses it: {message}", file=at.file,
                         field=at.field) from None


def resolve_hf(spec: MeasureSpec, loaded: LoadedConfig, factors: dict[str, Any], *,
               source: str | None, field: str, seq_len: int, training: bool
               ) -> tuple[HfSettings, list[str]]:
    """The settings one configuration is built with, and the factors that do not change
    its step. Raises InputError naming the config's or the factor's field at fault."""
    from transformers import __version__
    from transformers.activations import ACT2FN

    model_type, cls = config_class(loaded)
    known = known_fields(cls)
    fields = {k: v for k, v in loaded.data.items() if k != "model_type"}
    origins = {k: loaded.where(k) for k in fields}
    config = make_config(model_type, fields, origins, loaded.where("model_type"))
    # A key the class neither declares nor reads is kept as a loose attribute: a typo.
    for name in fields:
        if not name.startswith("_") and name not in known and name in vars(config):
            at = origins[name]
            raise InputError(f"not a field of {cls.__name__} (transformers {__version__})",
                             file=at.file, field=at.field)
    attn: str | None = None
    ckpt, optimizer, ignored = False, str(spec.optimizer), []
    for name, value in factors.items():
        at = Where(source, f"{field}.{name}" if field else name)
        if name in spec.ignore_factors or name == "dtype":
            ignored.append(name)
        elif name == "attn_implementation":
            if not isinstance(value, str) or "/" in value:
                raise InputError("must name a kernel transformers ships (eager, sdpa, "
                                 f"flash_attention_2 …), got {value!r}", file=at.file,
                                 field=at.field)
            attn, origins[name] = value, at
        elif name in CHECKPOINTING:
            if not isinstance(value, bool):
                raise InputError(f"must be true or false, got {value!r}", file=at.file,
                                 field=at.field)
            ckpt = value
        elif name == "seq_len":
            if isinstance(value, bool) or not isinstance(value, int) or value < 2:
                raise InputError(f"must be a whole number of at least 2, got {value!r}",
                                 file=at.file, field=at.field)
            seq_len = value
        elif name == "optimizer":
            if value not in _OPTIMIZERS:
                raise InputError(f"{value!r} is not an optimizer measure runs; one of "
                                 f"{', '.join(_OPTIMIZERS)}", file=at.file, field=at.field)
            optimizer = str(value)
        elif name in known and name != "model_type":
            fields[name], origins[name] = value, at
        else:
            raise InputError(f"not a field of {cls.__name__} (transformers {__version__}) "
                             f"nor one of {', '.join(SPECIAL)}; list it in ignore_factors if "
                             "it does not change a step", file=at.file, field=at.field)
    if training and "use_cache" in known:
        fields["use_cache"] = False  # a training step keeps no generation cache
    config = make_config(model_type, fields, origins, loaded.where("model_type"))
    act = fields.get("hidden_act")
    if isinstance(act, str) and act not in ACT2FN:
        at = origins.get("hidden_act", loaded.where("hidden_act"))
        raise InputError(f"{act!r} is not an activation transformers knows; one of "
                         f"{', '.join(sorted(ACT2FN))}", file=at.file, field=at.field)
    vocab = getattr(config, "vocab_size", None)
    if isinstance(vocab, bool) or not isinstance(vocab, int) or vocab < 2:
        at = origins.get("vocab_size", loaded.where("vocab_size"))
        raise InputError(f"the model needs a vocabulary of at least 2 tokens, got {vocab!r}",
                         file=at.file, field=at.field)
    longest = getattr(config, "max_position_embeddings", None)
    if isinstance(longest, int) and not isinstance(longest, bool) and seq_len > longest:
        at = origins.get("max_position_embeddings", loaded.where("max_position_embeddings"))
        raise InputError(f"the model takes at most {longest} positions, the run's sequences "
                         f"are {seq_len} tokens: raise it, or shorten seq_len", file=at.file,
                         field=at.field)
    return HfSettings(model_type=model_type, fields=fields, attn_implementation=attn,
                      checkpointing=ckpt, seq_len=seq_len, optimizer=optimizer, vocab=vocab,
                      where=loaded.at, origins=origins), ignored

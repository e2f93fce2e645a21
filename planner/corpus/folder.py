"""What a model folder says about itself, read from its JSON files alone.

A sentence-transformers folder defines the whole encoder: `modules.json` lists the module
stack (Transformer, Pooling, Dense, Normalize, …), each module's folder holds its settings,
and `config_sentence_transformers.json` the prompts. Both config formats are read: the older
`pooling_mode_cls_token`-style flags and the newer `{"pooling_mode": "cls"}`. Nothing here
imports torch, transformers or sentence-transformers, so planning can judge a folder on a
machine that could not run it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import InputError

# Older sentence-transformers folders: one boolean per pooling mode.
LEGACY_POOLING = {"pooling_mode_cls_token": "cls", "pooling_mode_mean_tokens": "mean",
                  "pooling_mode_max_tokens": "max",
                  "pooling_mode_mean_sqrt_len_tokens": "mean_sqrt_len_tokens",
                  "pooling_mode_weightedmean_tokens": "weightedmean",
                  "pooling_mode_lasttoken": "lasttoken"}
# The preset's names for the folder's pooling modes.
PRESET_POOLING = {"lasttoken": "last"}
# Architectures whose position ids start after the padding index (RoBERTa-style), so two
# positions are never used by tokens.
POSITION_OFFSET = {"roberta": 2, "xlm-roberta": 2, "camembert": 2, "mpnet": 2}
WEIGHT_SUFFIXES = (".safetensors", ".bin")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:  # not UTF-8, not JSON, a number too long
        raise InputError(f"cannot read the model's settings: {exc}", file=path) from None


@dataclass(frozen=True)
class ModelFolder:
    """A model folder as its files describe it."""

    path: Path
    model_type: str
    """`config.json`'s model_type (`bert`, `xlm-roberta`, `mpnet`, `modernbert`, …)."""
    hidden: int
    """Token vector size of the transformer."""
    positions: int
    """Longest input the transformer takes, in tokens."""
    modules: tuple[str, ...]
    """Module stack by class name; a folder without modules.json is a bare transformer."""
    pooling: tuple[str, ...] = ()
    """Pooling modes of the Pooling module, in sentence-transformers' names."""
    include_prompt: bool = True
    """Whether prompt tokens take part in pooling."""
    dim: int = 0
    """Vector size the stack outputs (after any Dense module)."""
    max_seq_length: int | None = None
    """The truncation the folder sets, when it sets one."""
    prompts: dict[str, str] = field(default_factory=dict)
    """Named prompts the folder defines (empty ones left out)."""
    default_prompt_name: str | None = None
    """The prompt sentence-transformers applies when none is named."""
    remote_code: bool = False
    """Whether config.json asks for code from the model's repository (`auto_map`)."""

    @property
    def sentence_transformers(self) -> bool:
        """Saved by sentence-transformers (a module stack), not a bare transformer."""
        return bool(self.modules) and self.modules[0] != "bare"

    @property
    def normalized(self) -> bool:
        """Whether the stack ends in L2 normalization."""
        return "Normalize" in self.modules

    @property
    def preset_pooling(self) -> str:
        """The folder's pooling in the preset's words (`mean`, `cls`, `last`, …)."""
        return "+".join(PRESET_POOLING.get(m, m) for m in self.pooling)

    def stack(self) -> str:
        """The module stack in one line: `Transformer(bert) → Pooling(mean) → Normalize`."""
        parts = []
        for name in self.modules:
            if name in ("Transformer", "bare"):
                parts.append(f"Transformer({self.model_type}, {self.hidden}, max "
                             f"{self.max_seq_length or self.positions})")
            elif name == "Pooling":
                extra = "" if self.include_prompt else ", prompt excluded"
                parts.append(f"Pooling({self.preset_pooling or '?'}{extra})")
            else:
                parts.append(name)
        return " → ".join(parts)


def read_folder(path: Path) -> ModelFolder:
    """Describe the model in `path`; a folder without config.json is an error."""
    cfg_path = path / "config.json"
    if not cfg_path.is_file():
        raise InputError("no config.json: not a model folder", file=path,
                         field="embedding.model")
    cfg = _json(cfg_path)
    if not isinstance(cfg, dict):
        raise InputError("expected a JSON object", file=cfg_path)
    sub_cfg = cfg.get("text_config")
    text: dict[str, Any] = sub_cfg if isinstance(sub_cfg, dict) else cfg
    model_type = str(cfg.get("model_type", ""))
    hidden = int(text.get("hidden_size") or text.get("d_model") or 0)
    positions = int(text.get("max_position_embeddings") or 0)
    positions -= POSITION_OFFSET.get(model_type, 0) if positions else 0
    base: dict[str, Any] = {"path": path, "model_type": model_type, "hidden": hidden,
                            "positions": positions, "remote_code": "auto_map" in cfg}
    modules_path = path / "modules.json"
    if not modules_path.is_file():
        return ModelFolder(modules=("bare",), dim=hidden, **base)
    entries = _json(modules_path)
    if not isinstance(entries, list):
        raise InputError("expected a list of modules", file=modules_path)
    names: list[str] = []
    info: dict[str, Any] = {"dim": hidden}
    for entry in entries:
        kind = str(entry.get("type", "")).rsplit(".", 1)[-1]
        names.append(kind)
        sub = path / str(entry.get("path", ""))
        if kind == "Transformer":
            info["max_seq_length"] = _max_seq_length(path, sub, positions)
        elif kind == "Pooling":
            pc = _json(sub / "config.json")
            info["pooling"] = pooling_modes(pc)
            info["include_prompt"] = bool(pc.get("include_prompt", True))
        elif kind == "Dense" and (sub / "config.json").is_file():
            info["dim"] = int(_json(sub / "config.json").get("out_features", info["dim"]))
    st_cfg = path / "config_sentence_transformers.json"
    if st_cfg.is_file():
        sc = _json(st_cfg)
        prompts = sc.get("prompts") or {}
        info["prompts"] = {str(k): str(v) for k, v in prompts.items() if v}
        info["default_prompt_name"] = sc.get("default_prompt_name")
    return ModelFolder(modules=tuple(names), **base, **info)


def pooling_modes(cfg: dict[str, Any]) -> tuple[str, ...]:
    """Pooling modes of a Pooling config in either format."""
    mode = cfg.get("pooling_mode")
    if isinstance(mode, str):
        return (mode,)
    if isinstance(mode, list):
        return tuple(str(m) for m in mode)
    return tuple(name for key, name in LEGACY_POOLING.items() if cfg.get(key))


def _max_seq_length(root: Path, sub: Path, positions: int) -> int | None:
    # Older folders state it in sentence_bert_config.json; newer ones leave it to the
    # tokenizer's model_max_length. Either way the transformer's positions cap it.
    for folder in dict.fromkeys((sub, root)):
        sb = folder / "sentence_bert_config.json"
        if sb.is_file():
            value = _json(sb).get("max_seq_length")
            if isinstance(value, int):
                return min(value, positions) if positions else value
    tc = root / "tokenizer_config.json"
    if tc.is_file():
        value = _json(tc).get("model_max_length")
        if isinstance(value, int | float) and value < 1_000_000:
            return min(int(value), positions) if positions else int(value)
    return positions or None


def weight_files(path: Path) -> list[Path]:
    """Every weights file of the folder and its module folders, in a fixed order."""
    return sorted(p for p in path.rglob("*") if p.is_file() and p.suffix in WEIGHT_SUFFIXES
                  and not any(part.startswith(".") for part in p.relative_to(path).parts))


def weights_sha256(path: Path) -> str:
    """SHA-256 of the weights: of `model.safetensors` when it is the only weights file,
    otherwise over every weights file's name and SHA-256."""
    from planner.corpus.tokens import file_sha256

    files = weight_files(path)
    if not files:
        return ""
    if [p.relative_to(path).as_posix() for p in files] == ["model.safetensors"]:
        return file_sha256(files[0])
    h = hashlib.sha256()
    for p in files:
        h.update(f"{p.relative_to(path).as_posix()} {file_sha256(p)}\n".encode())
    return h.hexdigest()

"""Which encoder backend loads a model folder, decided without importing either.

- `builtin`: the light BERT encoder in plain torch (`planner.embed.bert`), extra `embed`.
  BERT-family folders whose stack is Transformer → Pooling (mean, cls, max or last token,
  prompt included) → optional Normalize.
- `sentence-transformers`: the folder's own module stack on sentence-transformers, extra
  `embed-st`. Any architecture transformers loads, every pooling mode, Dense modules,
  prompts. Code from a model's repository (`trust_remote_code`) is never run.

`auto` takes the built-in encoder where it can load the folder, sentence-transformers
otherwise.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from planner.corpus.folder import ModelFolder
from planner.errors import InputError

BUILTIN, ST = "builtin", "sentence-transformers"
PACKAGES = {BUILTIN: ("torch", "tokenizers", "safetensors", "numpy"),
            ST: ("torch", "numpy", "transformers", "sentence_transformers")}
EXTRAS = {BUILTIN: "embed", ST: "embed-st"}
BUILTIN_POOLING = {"mean", "cls", "max", "lasttoken"}


def missing_package(backend: str) -> str | None:
    """The first package the backend needs that is not installed here, or None."""
    for name in PACKAGES[backend]:
        if importlib.util.find_spec(name) is None:
            return name
    return None


def install_hint(backend: str) -> str:
    """What to install for a backend."""
    return f"pip install 'campaign-planner[{EXTRAS[backend]}]'"


def builtin_refusal(f: ModelFolder) -> str | None:
    """Why the built-in encoder cannot load the folder as it defines itself, or None."""
    if f.model_type != "bert":
        return f"model_type {f.model_type!r} is not BERT"
    if not (f.path / "model.safetensors").is_file():
        return "no model.safetensors"
    extra = [m for m in f.modules if m not in ("Transformer", "Pooling", "Normalize", "bare")]
    if extra:
        return f"its stack has a {extra[0]} module"
    if len(f.pooling) > 1 or (f.pooling and f.pooling[0] not in BUILTIN_POOLING):
        return f"{f.preset_pooling} pooling"
    if not f.include_prompt:
        return "its pooling excludes prompt tokens"
    return None


def _transformers_knows(model_type: str) -> bool:
    spec = importlib.util.find_spec("transformers")
    if spec is None or not spec.submodule_search_locations:
        return False
    root = Path(next(iter(spec.submodule_search_locations))) / "models"
    return (root / model_type.replace("-", "_")).is_dir()


def st_refusal(f: ModelFolder) -> str | None:
    """Why sentence-transformers cannot load the folder here, or None."""
    if f.remote_code:
        return ("it needs code from the model's repository (config.json has auto_map), "
                "which is never run")
    if not f.model_type:
        return "config.json names no model_type"
    if not _transformers_knows(f.model_type):
        return f"the installed transformers has no {f.model_type!r} architecture"
    return None


def choose(wanted: str, f: ModelFolder, *, source: str | None = None) -> str:
    """The backend that will load the folder: the preset's choice checked, or `auto`'s.
    A folder no installed backend can load is an InputError naming what to install."""
    reasons: list[str] = []
    for backend in ((BUILTIN, ST) if wanted == "auto" else (wanted,)):
        why = builtin_refusal(f) if backend == BUILTIN else None
        if why is None and missing_package(backend) is not None:
            if backend == ST and f.remote_code:
                why = st_refusal(f)
            else:
                reasons.append(f"{backend}: needs {missing_package(backend)} "
                               f"({install_hint(backend)})")
                continue
        if why is None and backend == ST:
            why = st_refusal(f)
        if why is None:
            return backend
        reasons.append(f"{backend}: {why}")
    field = "embedding.backend" if wanted != "auto" else "embedding.model"
    raise InputError(f"no installed backend can load {f.path}: " + "; ".join(reasons),
                     file=source, field=field)

"""What both encoder backends share: the precisions they load in, the device they run on,
the model folder they read, and the fingerprint of what was loaded."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from planner.corpus.tokens import find_model_dir
from planner.errors import InputError

DTYPES = ("fp32", "bf16", "fp16")


def pick_device(name: str | None = None) -> str:
    """The device asked for, or the best one found: CUDA, then Apple's MPS, then CPU."""
    import torch

    if name:
        if name.startswith("cuda"):
            count = torch.cuda.device_count() if torch.cuda.is_available() else 0
            index = int(name.partition(":")[2] or 0)
            if index >= count:
                have = f"only {count} CUDA device(s)" if count else "no CUDA device"
                raise InputError(f"{name} asked for, but this machine has {have}",
                                 field="--device")
        if name == "mps":
            mps = getattr(torch.backends, "mps", None)
            if mps is None or not mps.is_available():
                raise InputError("MPS is not available on this machine", field="--device")
        return name
    if torch.cuda.is_available():
        return "cuda"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available():
        return "mps"
    return "cpu"


def model_folder(model: str) -> Path:
    """The model's folder on this machine, or an InputError: nothing is downloaded."""
    folder = find_model_dir(model)
    if folder is None:
        raise InputError(f"model files for {model!r} not found on this machine (a model "
                         "folder, a package that ships it, or the Hugging Face cache; "
                         "nothing is downloaded)", field="embedding.model")
    return folder


def fingerprint_of(settings_fingerprint: str, **loaded: str) -> str:
    """SHA-256 over the plan's settings and what was actually loaded."""
    fixed = {"settings": settings_fingerprint, **loaded}
    return hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()

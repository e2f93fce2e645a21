"""Finding and reading presets: shipped ones by name, the user's by path."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from planner.errors import InputError, from_validation
from planner.spec.preset import Preset
from planner.spec.shipped import FOLDER, shipped
from planner.tomlio import parse_toml, read_toml

DEFAULT_PRESET = "ablation-7d"
DATA_FILES = ("cards.toml", "throughput.toml", "efficiency.toml")
"""Shipped TOML files that are data, not presets."""


def shipped_presets() -> dict[str, str]:
    """Shipped preset names and their one-line purpose (the file's first comment)."""
    out: dict[str, str] = {}
    for entry in sorted(FOLDER.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml") and entry.name not in DATA_FILES:
            first = entry.read_text(encoding="utf-8").splitlines()[0]
            out[entry.name[:-5]] = first.lstrip("# ").strip()
    return out


def preset_source(name_or_path: str) -> tuple[str, bytes]:
    """The file name to report and the bytes of a preset given by shipped name or path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists() or "/" in name_or_path:
        try:
            return str(p), p.read_bytes()
        except FileNotFoundError:
            raise InputError("file not found", file=p) from None
        except OSError as exc:
            raise InputError(f"cannot read: {exc.strerror}", file=p) from None
    entry = shipped(f"{name_or_path}.toml")
    if not entry.is_file():
        known = ", ".join(shipped_presets())
        raise InputError(f"no shipped preset {name_or_path!r} and no such file; shipped: "
                         f"{known}", field="--preset")
    return f"presets/{name_or_path}.toml", entry.read_bytes()


def parse_preset(data: dict, source: str) -> Preset:
    """Validate parsed TOML as a Preset; the first problem becomes an InputError."""
    try:
        return Preset.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, source) from None


def load_preset(name_or_path: str) -> tuple[Preset, str]:
    """A preset and the file name to report in messages."""
    source, raw = preset_source(name_or_path)
    return parse_preset(parse_toml(raw, source), source), source


def load_preset_file(path: str | Path) -> Preset:
    """A preset from a path."""
    return parse_preset(read_toml(path), str(path))

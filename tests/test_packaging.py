"""Everything the tool needs at run time is part of the installed distribution."""

from __future__ import annotations

import tomllib
from pathlib import Path

from setuptools import find_packages

ROOT = Path(__file__).resolve().parent.parent


def test_every_package_is_installed() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    include = config["tool"]["setuptools"]["packages"]["find"]["include"]
    found = set(find_packages(where=ROOT, include=include))
    on_disk = {
        ".".join(p.parent.relative_to(ROOT).parts)
        for top in ("planner", "screens", "presets")
        for p in (ROOT / top).rglob("__init__.py")
    }
    assert on_disk <= found, f"not installed: {sorted(on_disk - found)}"


def test_data_files_are_package_data() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    data = config["tool"]["setuptools"]["package-data"]
    assert "*.toml" in data["presets"]
    tcss = {p.relative_to(ROOT / "screens").as_posix() for p in (ROOT / "screens").rglob("*.tcss")}
    patterns = data["screens"]
    assert all(any(Path(f).match(pat) for pat in patterns) for f in tcss), tcss

"""Where the files shipped with the planner live: the presets, the card catalog and the
published throughput table, package data of the `presets` package.

They are found beside that package's own file rather than through `importlib.resources`,
which with the zip-archive support it loads costs a headless plan several milliseconds
(about a twentieth of its time); the planner is installed as files on disk, as a wheel or
an editable checkout, never run from an archive.
"""

from __future__ import annotations

from pathlib import Path

import presets

FOLDER = Path(presets.__file__).parent
"""The folder holding the shipped TOML files."""


def shipped(name: str) -> Path:
    """The shipped file `name` (e.g. `cards.toml`)."""
    return FOLDER / name

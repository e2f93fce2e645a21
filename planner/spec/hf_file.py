"""The `config.json` a `reference = "hf"` measurement section names: found inside the
preset's folder without following links, read with O_NOFOLLOW, and its digest, which the
measurements record so a plan notices when the file has changed since."""

from __future__ import annotations

import hashlib
import json
import os
import stat
from pathlib import Path, PurePosixPath
from typing import Any

from planner.errors import InputError

MAX_BYTES = 4 << 20
"""Largest config.json read (real ones are a few KiB)."""


def preset_folder(source: str | None) -> Path:
    """The folder a preset's relative paths start from (a shipped preset's own folder)."""
    if source is None:
        return Path.cwd()
    path = Path(source)
    if not path.exists() and source.startswith("presets/"):
        from planner.spec.shipped import FOLDER

        return FOLDER
    return path.parent


def locate(folder: Path, name: str, file: str | None, field: str) -> Path:
    """The file `name` inside `folder`, each step looked at without following links; a
    folder stands for its config.json. Errors name `file` and `field`."""
    rel = PurePosixPath(name)
    if rel.is_absolute() or ".." in rel.parts or not rel.parts:
        raise InputError(f"{name!r} must be a path inside the preset's folder ({folder}): "
                         "relative, without `..`", file=file, field=field)
    path = folder
    parts = list(rel.parts)
    while parts:
        path = path / parts.pop(0)
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            raise InputError(f"{folder / name}: file not found (a transformers config.json, "
                             "relative to the preset's folder)", file=file, field=field) from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read: {exc.strerror}", file=file,
                             field=field) from None
        if stat.S_ISLNK(st.st_mode):
            raise InputError(f"{path} is a link: name the file itself, inside the preset's "
                             "folder", file=file, field=field)
        if not parts and stat.S_ISDIR(st.st_mode):
            parts.append("config.json")  # a model folder: its config
        elif parts and not stat.S_ISDIR(st.st_mode):
            raise InputError(f"{path} is not a folder", file=file, field=field)
    if not stat.S_ISREG(os.lstat(path).st_mode):
        raise InputError(f"{path} is not a plain file", file=file, field=field)
    return path


def read_config(path: Path) -> tuple[dict[str, Any], str]:
    """The JSON object in `path` and the SHA-256 of its bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:  # replaced by a link or removed since it was looked at
        raise InputError(f"cannot read: {exc.strerror}", file=path) from None
    with os.fdopen(fd, "rb") as fh:
        raw = fh.read(MAX_BYTES + 1)
    if len(raw) > MAX_BYTES:
        raise InputError(f"larger than {MAX_BYTES >> 20} MiB: not a config.json", file=path)
    try:
        data = json.loads(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"not JSON: {exc.msg} at line {exc.lineno}, column {exc.colno}",
                         file=path) from None
    if not isinstance(data, dict):
        raise InputError("must be a JSON object (a transformers config.json)", file=path)
    return data, hashlib.sha256(raw).hexdigest()


def config_digest(config: str, source: str | None, field: str) -> str:
    """SHA-256 of the config file a section names (an InputError when it cannot be read)."""
    path = locate(preset_folder(source), config, source, field)
    return read_config(path)[1]


def config_changed(config: object, recorded: object, source: str | None, field: str,
                   measurements: str | None) -> list[str]:
    """Refuse measurements of a config file whose content has changed since (`recorded`:
    the digest they keep); a warning when the file cannot be read now."""
    if not isinstance(config, str) or not isinstance(recorded, str):
        return []
    try:
        now = config_digest(config, source, field)
    except InputError as exc:
        return [f"the measured config cannot be read to check it has not changed: {exc}"]
    if now != recorded:
        raise InputError(f"measured with another content of {config} (it has changed since): "
                         "measure again", file=measurements, field="workload.spec.config_sha256")
    return []

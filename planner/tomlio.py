"""Reading TOML with clear errors, and writing files atomically."""

from __future__ import annotations

import functools
import os
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from planner.errors import InputError

try:
    # The parser tomllib is a copy of, in its compiled build: the same grammar, read about
    # three times faster (seconds on the largest plan.toml).
    from tomli import TOMLDecodeError, loads
except ImportError:  # pragma: no cover - the standard library's copy
    from tomllib import TOMLDecodeError, loads  # type: ignore[assignment]


def read_bytes(path: str | Path) -> bytes:
    """A file's bytes; a missing or unreadable file becomes an InputError naming it."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError("file not found", file=p) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a TOML file", file=p) from None
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror}", file=p) from None


def read_toml(path: str | Path) -> dict[str, Any]:
    """Parse a TOML file; a missing file or bad syntax becomes an InputError naming it."""
    return parse_toml(read_bytes(path), path)


def drop_none(value: Any) -> Any:
    """`value` with None entries left out: TOML has no null, and absent optional values are
    left out rather than invented."""
    if isinstance(value, dict):
        return {k: drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [drop_none(v) for v in value if v is not None]
    return value


def dumps(data: dict[str, Any]) -> str:
    """TOML text of `data`, None entries left out."""
    import tomli_w

    return tomli_w.dumps(drop_none(data))


def refuse_existing(paths: Iterable[str | Path], *, force: bool, field: str = "--out") -> None:
    """Raise for the first path that already exists, unless `force`: an existing output is
    never replaced silently."""
    if force:
        return
    for path in paths:
        if Path(path).exists():
            raise InputError("already exists; pass --force to overwrite it", file=path,
                             field=field)


def write_all(files: Sequence[tuple[Path, str]], *, force: bool, field: str = "--out") -> None:
    """Write several files atomically, or none of them when one would replace an existing
    file without `force`."""
    refuse_existing([p for p, _ in files], force=force, field=field)
    for path, text in files:
        write_atomic(path, text, force=True)


def parse_toml(raw: bytes | str, path: str | Path) -> dict[str, Any]:
    """Parse TOML text, reporting syntax errors against `path`."""
    try:
        text = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=path) from None
    try:
        return loads(text)
    except TOMLDecodeError as exc:
        raise InputError(f"not valid TOML: {exc}", file=path) from None
    except ValueError:  # an integer of more digits than Python converts (thousands)
        raise InputError("not valid TOML: a number too long to read", file=path) from None


@functools.cache
def _umask() -> int:
    # Reading the umask means setting it; doing that once keeps it out of reach of threads
    # writing files at the same time (the terminal UI exports from a worker).
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_atomic(path: str | Path, text: str, *, force: bool = False) -> None:
    """Write `text` to `path` via a temporary file and rename, so a reader never sees half.

    Refuses to replace an existing file unless `force` is set.
    """
    p = Path(path)
    if p.exists() and not force:
        raise InputError("already exists; pass --force to overwrite it", file=p)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = stage_text(p, text)
    try:
        os.replace(tmp, p)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def stage_text(target: Path, text: str, *, sync: bool = True) -> Path:
    """`text` written and synced to a temporary file beside `target`, ready to be renamed
    over it; the temporary file is removed if writing fails. Without `sync`, the caller
    makes it durable (with others at once) before the rename."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name[:200]}.", suffix=".tmp",
                               dir=target.parent)
    try:
        # mkstemp creates the file private (0600); a plan is an ordinary file, so give it
        # the mode a plain open() would under the user's umask.
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            if sync:
                os.fsync(fh.fileno())
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return Path(tmp)


def write_bytes_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` via a synced temporary file beside it and a rename (images,
    reports: files that are not text)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name[:200]}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~_umask())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise

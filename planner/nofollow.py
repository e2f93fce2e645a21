"""Writing files where a link could have been planted: nothing is written through one.

The bookkeeping folders (`campaign-run/`, a run's checkpoint folder, a version's export
folder) may be shared with other users of a machine or filled by a plan's own commands. A
symbolic link placed there must not turn a write of ours into a write somewhere else, so
every file is opened with O_NOFOLLOW, created exclusively when it is new, and every folder
below a trusted one is checked with lstat before use. A link is refused with one line.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from pathlib import Path

from planner.errors import InputError

_NOFOLLOW = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a planted FIFO never blocks


class LinkRefused(InputError):
    """A link, or an entry other than a plain file or folder, where a file is written."""


def refusal(path: str | Path, what: str = "a symbolic link") -> LinkRefused:
    """The one-line error for a link (or other non-regular entry) found where we write."""
    return LinkRefused(f"is {what}: refused, files here are never written through a link; "
                      "remove it", file=path)


def ensure_dir(path: Path, trusted: Path) -> Path:
    """Make `path` and every folder between `trusted` and it, refusing any that is a link or
    not a folder. `trusted` itself (a working directory the user named, say) may be a link."""
    try:
        rel = path.relative_to(trusted)
    except ValueError:
        rel, trusted = Path(path.name), path.parent
    current = trusted
    current.mkdir(parents=True, exist_ok=True)
    for part in rel.parts:
        current = current / part
        with contextlib.suppress(FileExistsError):
            current.mkdir()
        st = current.lstat()
        if stat.S_ISLNK(st.st_mode):
            raise refusal(current)
        if not stat.S_ISDIR(st.st_mode):
            raise InputError("exists and is not a folder", file=current)
    return path


def open_file(path: str | Path, flags: int, mode: int = 0o644, *, shared_ok: bool = False) -> int:
    """`os.open` that never follows a link at `path` and opens only a plain file. Unless
    `shared_ok`, a file with a second hard link is refused too: writing it in place would
    change the other name's content."""
    try:
        fd = os.open(path, flags | _NOFOLLOW, mode)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise refusal(path) from None
        if exc.errno == errno.ENXIO:  # a FIFO with no reader
            raise refusal(path, "not a plain file") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise refusal(path, "not a plain file")
        if st.st_nlink > 1 and not shared_ok and flags & (os.O_WRONLY | os.O_RDWR):
            raise refusal(path, "a file with another hard link")
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def append_fd(path: Path) -> int:
    """A descriptor appending to `path` (created when missing), never through a link."""
    return open_file(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)


def create_new(path: Path, mode: int = 0o644) -> int:
    """A descriptor on a file created here and now (O_EXCL: a link or file there fails)."""
    try:
        return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, mode)
    except FileExistsError:
        if path.is_symlink():
            raise refusal(path) from None
        raise


def sync_dir(folder: Path) -> None:
    """Make a rename or a creation in `folder` durable."""
    fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` to `path` atomically: a temporary file created exclusively beside it,
    synced, then renamed over `path` (a rename replaces a link, it never follows one)."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()  # a leftover of a crashed process with the same pid
    fd = create_new(tmp)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    sync_dir(path.parent)

"""Writing what the executor reads, from inside a training script: a small file replaced
whole (a temporary file beside it, then a rename), and a link swapped the same way.

A rename replaces the name it lands on, a link included, and never writes through one; the
temporary name is created exclusively without following a link. Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


class CampaignError(RuntimeError):
    """What a training script cannot go on with: a checkpoint it would ignore, a resume path
    that cannot be replaced."""


def temporary(path: str, tag: str = "tmp") -> str:
    """A free temporary name beside `path` for this process (a leftover of a crashed
    process with the same pid is removed)."""
    folder, name = os.path.split(path)
    tmp = os.path.join(folder, f".{name}.{os.getpid()}.{tag}")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
    return tmp


def replace_bytes(path: str, data: bytes) -> None:
    """Put `data` at `path` whole: readers see the old content or the new, never a part."""
    tmp = temporary(path)
    fd = os.open(tmp, _NEW, 0o644)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _refuse_folder(path: str) -> None:
    """A real folder at the resume path cannot be replaced by a rename: say so."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        raise CampaignError(f"{path} is a folder; the resume path is replaced whole by each "
                            "checkpoint (a file, or a link to the checkpoint's folder): "
                            "move it away")


def move_into_place(tmp: str, path: str) -> None:
    """Rename the finished checkpoint `tmp` onto the resume path `path`."""
    _refuse_folder(path)
    os.replace(tmp, path)


def point_at(folder: str, path: str) -> None:
    """Make `path` a link to `folder` (relative when they share a parent), swapped in with
    one rename so the resume path always names a whole checkpoint."""
    _refuse_folder(path)
    parent = os.path.dirname(os.path.abspath(path))
    target = os.path.relpath(os.path.abspath(folder), parent)
    tmp = temporary(path, "link")
    os.symlink(target, tmp)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def warn(message: str) -> None:
    """One line on standard error, where the run's log collects it."""
    print(f"campaign-planner: {message}", file=sys.stderr, flush=True)

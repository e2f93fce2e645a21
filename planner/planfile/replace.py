"""Replacing a set of files as a unit: all of them are the new ones, or all the old ones.

Each file is first written in full beside its target (a full disk fails here, while every
target is still the old one); only then are they renamed over their targets, and if a
rename fails the ones already renamed are put back. A folder the export had to create is
removed again when the export fails. Errors are one line naming the file.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import cast

from planner.errors import InputError
from planner.tomlio import refuse_existing, stage_text

Text = tuple[Path, str]
"""A target and the text it gets."""
Move = tuple[Path, Path]
"""A target and a finished file (on any filesystem) moved there."""


def _fail(exc: OSError, path: Path, field: str, what: str = "cannot write") -> InputError:
    return InputError(f"{what}: {exc.strerror or exc}", file=path, field=field)


def prepare_folder(out: Path, field: str) -> list[Path]:
    """Make `out` (and missing parents); returns the folders made, deepest first."""
    if out.is_symlink() and not out.exists():
        raise InputError("is a symbolic link to nothing", file=out, field=field)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", file=out, field=field)
    made: list[Path] = []
    for folder in [*reversed(out.parents), out]:
        if folder.is_dir():
            continue
        try:
            folder.mkdir()
        except FileExistsError:
            if not folder.is_dir():
                raise InputError("exists and is not a folder", file=folder,
                                 field=field) from None
            continue
        except OSError as exc:
            remove_folders(made)
            raise _fail(exc, folder, field, "cannot create the folder") from None
        made.insert(0, folder)
    return made


def remove_folders(made: Sequence[Path]) -> None:
    """Remove folders an export made (deepest first), leaving any that are not empty."""
    for folder in made:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _stage_move(target: Path, source: Path) -> Path:
    tmp = target.with_name(f".{target.name[:200]}.{os.getpid()}.tmp")
    try:
        shutil.move(str(source), tmp)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


def replace_together(out: Path, texts: Sequence[Text], moves: Sequence[Move] = (), *,
                     force: bool, field: str = "--out") -> None:
    """Write every file of `texts` and `moves` under `out`, all or none."""
    targets = [t for t, _ in texts] + [t for t, _ in moves]
    for path in [out, *targets]:
        if any(len(part.encode()) > 255 for part in path.parts):
            raise InputError("a name in this path is longer than 255 bytes", file=path,
                             field=field)
    try:
        for target in targets:
            if target.is_dir():
                raise InputError("is a folder, expected a file", file=target, field=field)
        refuse_existing(targets, force=force, field=field)
    except OSError as exc:
        raise _fail(exc, out, field, "cannot use") from None
    made = prepare_folder(out, field)
    staged: list[tuple[Path, Path]] = []
    folders = {out}
    try:
        for target, text in texts:
            if target.parent not in folders:  # one look per folder, not per file
                folders.add(target.parent)
                made += [f for f in prepare_folder(target.parent, field) if f not in made]
            try:
                staged.append((target, stage_text(target, text, sync=False)))
            except OSError as exc:
                raise _fail(exc, target, field) from None
        try:
            durable([tmp for _, tmp in staged], out)
        except OSError as exc:
            raise _fail(exc, out, field) from None
        for target, source in moves:
            try:
                staged.append((target, _stage_move(target, source)))
            except OSError as exc:
                raise _fail(exc, target, field) from None
        _swap(staged, field)
    except BaseException:
        for _, tmp in staged:
            tmp.unlink(missing_ok=True)
        remove_folders(sorted(made, key=lambda p: len(p.parts), reverse=True))
        raise
    for folder in sorted(folders):  # the renames
        with contextlib.suppress(OSError):
            fd = os.open(folder, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


SYNCFS_FROM = 64
"""More files than this are made durable with one syncfs rather than an fsync each."""


@functools.cache
def _syncfs() -> Callable[[int], int] | None:
    """Linux's syncfs(2): every written block of one filesystem to disk in one call."""
    import ctypes  # only when files are written: a headless plan's import stays small

    try:
        fn = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int]
    return cast(Callable[[int], int], fn)


def durable(files: Sequence[Path], folder: Path) -> None:
    """Make the content of the written `files` (all on `folder`'s filesystem) durable
    before they are renamed into place: one syncfs for many where the system has it (a
    SLURM export writes a file per run: their fsyncs were most of its time at 10,000
    runs), else an fsync of each."""
    fn = _syncfs()
    # A few files are cheaper each on its own: syncfs also waits for whatever else is
    # being written to that filesystem (checkpoints of runs on the same disk).
    if fn is not None and len(files) > SYNCFS_FROM:
        fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
        try:
            if fn(fd) == 0:
                return
        finally:
            os.close(fd)
    for path in files:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _swap(staged: list[tuple[Path, Path]], field: str) -> None:
    """Rename the staged files over their targets; on a failure put the old ones back."""
    backups: list[tuple[Path, Path | None]] = []
    try:
        for target, tmp in staged:
            backup = None
            if target.exists():
                backup = target.with_name(f".{target.name[:200]}.{os.getpid()}.old")
                try:
                    os.link(target, backup)
                except OSError:  # a filesystem without hard links
                    shutil.copy2(target, backup)
            backups.append((target, backup))
            os.replace(tmp, target)
    except OSError as exc:
        for target, backup in reversed(backups):
            with contextlib.suppress(OSError):
                if backup is None:
                    target.unlink(missing_ok=True)
                else:
                    os.replace(backup, target)
        failed = staged[len(backups) - 1][0] if backups else staged[0][0]
        raise _fail(exc, failed, field, "cannot replace") from None
    finally:
        for _, backup in backups:
            if backup is not None:
                with contextlib.suppress(OSError):
                    backup.unlink(missing_ok=True)

"""Replacing a set of files as a unit: all of them are the new ones, or all the old ones.

Each file is first written in full beside its target (a full disk fails here, while every
target is still the old one); only then are they renamed over their targets, and if a
rename fails the ones already renamed are put back. A folder the export had to create is
removed again when the export fails. Errors are one line naming the file.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

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
    try:
        for target, text in texts:
            made += [f for f in prepare_folder(target.parent, field) if f not in made]
            try:
                staged.append((target, stage_text(target, text)))
            except OSError as exc:
                raise _fail(exc, target, field) from None
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
    with contextlib.suppress(OSError):
        fd = os.open(out, os.O_RDONLY)
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

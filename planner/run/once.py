"""Each run once, wherever it is started from: its lock and its done record.

Both live in the run's checkpoint folder, beside its checkpoints, so every launcher that
can reach the run (an executor from any working directory or plan copy, a SLURM task, a
second submission) takes the same lock and reads the same record. A launcher takes the
lock first and reads the record after: a run that finished while it waited for the lock
is found done, never started again.

The done record is written by whoever held the lock when the command exited 0, before
and apart from the journal and the exit record, so a command that completed is known as
done even when the journal could not take its exit (a full disk). Its space is reserved
before the command starts (`DONE_SLOT_BYTES` of blanks) and overwritten in place after,
so writing it needs no free block.

    {"run":"ID","fingerprint":"…","finished":1767225600.0,"by":"…"}   (then blanks)

SLURM exports made before this record kept a marker instead: a file
`campaign-run/done/<run id>` in the working directory, holding `<date> <time>  job <id>`
and no parameters. Such a marker still counts, for `run`, `status` and the SLURM task
alike, when the run's manifest beside its checkpoints (which that export wrote before the
run began) records the run's present fingerprint: the marker says the run finished, the
manifest says with these parameters. A marker without that manifest proves nothing and is
not read (the run's checkpoints then decide, as for any relaunch).
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Callable, Iterable
from itertools import repeat
from operator import attrgetter, itemgetter
from pathlib import Path
from typing import Any

from planner.nofollow import LinkRefused, ensure_dir, open_file
from planner.planfile.plan import Run

DONE_SLOT_BYTES = 1024
"""Size of a done record: the JSON object, padded with blanks."""


def run_folder(workdir: Path, run: Run) -> Path:
    """The run's checkpoint folder (absolute roots stay as they are)."""
    return workdir / run.checkpoint_dir


def lock_path(workdir: Path, run: Run) -> Path:
    """`<checkpoint_dir>/<run id>.lock`: beside the run's checkpoints, wherever they are, so
    executors started from different folders (or SLURM tasks) share it."""
    return run_folder(workdir, run) / f"{run.id}.lock"


def done_path(workdir: Path, run: Run) -> Path:
    """`<checkpoint_dir>/<run id>.done`: the record that the run's command exited 0."""
    return run_folder(workdir, run) / f"{run.id}.done"


def prepare_folder(workdir: Path, run: Run) -> Path:
    """Make the run's checkpoint folder; a link there (or between it and its root) is
    refused. The root itself is the user's choice of place and may be a link."""
    folder = run_folder(workdir, run)
    return ensure_dir(folder, folder.parent)


def folders_present(workdir: Path, runs: Iterable[Run]) -> set[str]:
    """The runs' checkpoint folders (as the plan names them) that exist now, each parent
    folder listed once: a look-up over a plan's every run (`status`, `run --dry-run`) then
    opens only the records and locks that can be there. A snapshot, for one pass over the
    runs; a launcher deciding to start a run reads its record itself, lock held."""
    folders = list(dict.fromkeys(map(_FOLDER, runs)))  # each once
    split = list(map(str.rpartition, map(str.rstrip, folders, repeat("/")), repeat("/")))
    heads, names = list(map(_HEAD, split)), list(map(_NAME, split))
    if "" in heads or not {"", ".", ".."}.isdisjoint(names):
        # A folder of one component, at the root, or ending in `.`: each on its own.
        return _present(workdir, folders)
    listed = {parent: _listing(workdir, parent) for parent in dict.fromkeys(heads)}
    if not any(v is None or v for v in listed.values()):
        return set()  # no parent folder there, or all empty (a plan before it starts)
    return {folder for folder, head, name in zip(folders, heads, names, strict=True)
            if (there := listed[head]) is None or name in there}


_FOLDER = attrgetter("checkpoint_dir")
_HEAD, _NAME = itemgetter(0), itemgetter(2)


def _listing(workdir: Path, parent: str) -> frozenset[str] | None:
    """The names in a parent folder (empty when it is not there; None: unreadable, so
    every folder under it may be there)."""
    try:
        return frozenset(os.listdir(os.path.join(workdir, parent)))
    except (FileNotFoundError, NotADirectoryError):
        return frozenset()
    except OSError:
        return None


def _present(workdir: Path, folders: list[str]) -> set[str]:
    """`folders_present` for folders of any spelling, split as the plan spells each."""
    listed: dict[str, frozenset[str] | None] = {}
    out = set()
    for folder in folders:
        # Split as the plan spells it (every run's folder is looked at): the parent is
        # joined to the workdir once, when first listed.
        head, slash, name = folder.rstrip("/").rpartition("/")
        if name in ("", ".", ".."):
            head, name = os.path.split(os.path.normpath(os.path.join(workdir, folder)))
        elif slash and not head:
            head = "/"
        if head not in listed:
            listed[head] = _listing(workdir, head)
        names = listed[head]
        if names is None or name in names:
            out.add(folder)
    return out


def run_lock(workdir: Path, run: Run) -> int | None:
    """An open descriptor holding the run's lock, or None while another process holds it.
    The lock (flock) lives as long as a process keeps the descriptor open: the run's
    launcher, which ends after every process of the run."""
    prepare_folder(workdir, run)
    fd = open_file(lock_path(workdir, run), os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def lock_held(path: Path | str) -> bool:
    """Whether a launcher holds the run lock at `path` now: probed with a shared lock that is
    released at once, creating nothing (a missing lock file is a lock nobody holds; a link
    there is not probed, and `run` refuses it)."""
    try:
        fd = open_file(path, os.O_RDONLY, shared_ok=True)
    except (OSError, LinkRefused):
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def read_done(workdir: Path, run: Run, fingerprint: str | Callable[[], str]
              ) -> dict[str, Any] | None:
    """The run's done record when it says this run, with these parameters, finished. The
    fingerprint may be given as a function, called only when a record is there (a plan's
    every run is looked up, and few have one)."""
    # A string path: the look-up is made for each of a plan's runs on every status.
    path = os.path.join(workdir, run.checkpoint_dir, f"{run.id}.done")
    try:
        fd = open_file(path, os.O_RDONLY, shared_ok=True)  # a link: LinkRefused
    except FileNotFoundError:
        return _marker(workdir, run, fingerprint)
    except OSError:
        return None
    try:
        raw = os.read(fd, 4 * DONE_SLOT_BYTES)
    finally:
        os.close(fd)
    try:
        record = json.loads(raw)
    except ValueError:  # a slot reserved but never filled in: the command did not finish
        return None
    if not isinstance(record, dict) or record.get("run") != run.id:
        return None
    if record.get("fingerprint") != (fingerprint if isinstance(fingerprint, str)
                                     else fingerprint()):
        return None
    return record


LEGACY_DONE = os.path.join("campaign-run", "done")
"""Where SLURM exports made before the done record kept their markers (in the workdir)."""
def _marker(workdir: Path, run: Run, fingerprint: str | Callable[[], str]
            ) -> dict[str, Any] | None:
    """An earlier export's done marker as a done record, when the run's manifest records
    these parameters (see the module's docstring)."""
    # Looked for each time, never remembered as absent: an earlier export's task may
    # finish a run (and make the folder) just before this launcher took the run's lock.
    try:
        fd = open_file(os.path.join(workdir, LEGACY_DONE, run.id), os.O_RDONLY,
                       shared_ok=True)
    except (OSError, LinkRefused):  # none, or a link: not read
        return None
    try:
        said = os.read(fd, 256).decode("utf-8", "replace")
        finished = os.fstat(fd).st_mtime
    finally:
        os.close(fd)
    want = fingerprint if isinstance(fingerprint, str) else fingerprint()
    manifest = os.path.join(workdir, run.checkpoint_dir, f"{run.id}.manifest.toml")
    try:
        fd = open_file(manifest, os.O_RDONLY, shared_ok=True)
    except (OSError, LinkRefused):
        return None
    try:
        text = os.read(fd, 1 << 20).decode("utf-8", "replace")
    finally:
        os.close(fd)
    if f'fingerprint = "{want}"' not in text.splitlines():
        return None
    job = said.split("  ", 1)[-1].strip().replace("\n", " ")[:80]
    return {"run": run.id, "fingerprint": want, "finished": finished,
            "by": f"an earlier SLURM export's marker ({job or 'no job named'})"}


def done_words(record: dict[str, Any]) -> str:
    """Who finished a run, for one line of output."""
    by = str(record.get("by", "")).replace("\n", " ")[:120]
    return by or "another launcher"

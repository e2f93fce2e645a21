"""A per-user cache of plans already read and checked, so a large plan.toml is parsed once.

Reading plan.toml back (TOML parsing and every rule of `planfile.rules`) takes seconds for the
largest plans, and `status` or `run --dry-run` read it each time. Once this planner has
read and checked the bytes of a plan.toml (or written them), it keeps the checked plan
under the SHA-256 of those bytes, in a folder of the user's own (never beside the plan,
where whoever handed over the plan could have put a forged entry). A later read of the
same bytes takes it from there; any other bytes are read and checked in full.

An entry holds plain values only (text, numbers, lists and tables of them) in the format of
the standard library's `marshal`, which reads them back several times faster than JSON;
it is read only from the user's own closed folder, and nothing read from it is run.

The folder is `$CAMPAIGN_PLANNER_CACHE`, else `$XDG_CACHE_HOME/campaign-planner/plans`,
else `~/.cache/campaign-planner/plans`; `CAMPAIGN_PLANNER_CACHE=off` turns it off. An
entry is used only from a folder owned by the user and closed to others; a cache that
cannot be read or written is simply not used.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import hashlib
import marshal
import os
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from planner.planfile.plan import Plan, Run
from planner.planning.plan_bulk import construct

ENTRIES = 4
"""Plans kept; the least recently used go first."""
SUFFIX = ".plan"
"""An entry's file name after its key."""
_KEYS = dict.fromkeys(Run.model_fields).keys()


_RULES = ("planning/plan_cache.py", "planning/plan_fast.py", "planning/plan_head.py",
          "planning/plan_bulk.py", "planning/plan_split.py", "planfile/seal.py",
          "planfile/plan.py",
          "planfile/embedding.py", "planfile/rules.py", "planfile/text.py",
          "planfile/export.py", "spec/paths.py", "spec/templates.py", "spec/bounds.py",
          "spec/printable.py",
          "spec/base.py", "spec/preset.py")


@functools.cache
def _rules() -> bytes:
    """The source of the rules a plan is checked by: a planner that checks otherwise uses
    entries of its own."""
    root = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for name in _RULES:
        digest.update((root / name).read_bytes())
    return digest.digest()


def key(raw: bytes) -> str:
    """The entry's name: the plan's bytes and the rules that checked them."""
    digest = hashlib.sha256(raw)
    # The entry's format is this Python's marshal: another Python makes entries of its own.
    digest.update(b"\0" + _rules() + f"{sys.version}/{marshal.version}".encode())
    return digest.hexdigest()


def folder() -> Path | None:
    """The cache folder, or None when the cache is off."""
    env = os.environ.get("CAMPAIGN_PLANNER_CACHE")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "no") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "campaign-planner" / "plans"


def _private(path: Path) -> bool:
    """Owned by this user, no link, closed to group and others."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and not stat.S_ISLNK(st.st_mode) \
        and not st.st_mode & 0o077


def load(raw: bytes) -> Plan | None:
    """The checked plan of these bytes, when this planner has seen them."""
    where = folder()
    if where is None or not _private(where):
        return None
    path = where / f"{key(raw)}{SUFFIX}"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            return None
        with os.fdopen(fd, "rb") as fh:
            fd = -1
            raw_entry = fh.read()
        os.utime(path)  # recently used
        # Millions of containers, all kept: a collector pass over them would free nothing.
        enabled = gc.isenabled()
        gc.disable()
        try:
            return _construct(marshal.loads(raw_entry))
        finally:
            if enabled:
                gc.enable()
    except (OSError, ValueError, TypeError, KeyError, AttributeError, EOFError):
        return None
    finally:
        if fd >= 0:
            os.close(fd)


def _construct(data: dict[str, Any]) -> Plan:
    # Checked when the entry was made: the small parts are validated again (cheap), the
    # runs, one table of values each, built directly as planning does.
    runs = data["runs"]
    if type(runs) is not list or (runs and (set(map(type, runs)) != {dict} or not all(
            map(_KEYS.__eq__, map(dict.keys, runs))))):
        raise ValueError("an entry of other fields")
    head = Plan.model_validate({**data["plan"], "runs": []})
    return head.model_copy(update={"runs": list(map(construct, runs))})


def store(raw: bytes, plan: Plan) -> None:
    """Keep `plan` as the checked reading of `raw`; never fails the command."""
    where = folder()
    if where is None:
        return
    with contextlib.suppress(OSError):
        where.mkdir(parents=True, exist_ok=True, mode=0o700)
        if not _private(where):
            return
        dump = plan.model_copy(update={"runs": []}).model_dump(mode="json")
        del dump["runs"]
        # A run's values are plain already (text, numbers, lists of them): written
        # directly, without dumping each of a large plan's runs.
        try:
            entry = marshal.dumps({"plan": dump, "runs": [r.__dict__ for r in plan.runs]})
        except ValueError:  # a value of a type marshal does not keep: no entry
            return
        fd, tmp = tempfile.mkstemp(dir=where, prefix=".tmp-", suffix=SUFFIX)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(entry)
            os.replace(tmp, where / f"{key(raw)}{SUFFIX}")
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        entries = sorted(_entries(where), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in entries[ENTRIES:]:
            old.unlink(missing_ok=True)


_HEX = frozenset("0123456789abcdef")


def _entries(where: Path) -> list[Path]:
    """The entries in the folder: files named by a key (an earlier planner's JSON ones
    too), never anything else a folder named by mistake holds."""
    return [p for p in where.iterdir() if p.suffix in (SUFFIX, ".json")
            and len(p.stem) == 64 and set(p.stem) <= _HEX]

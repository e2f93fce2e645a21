"""The runs of a plan in `runs.jsonl` beside its plan.toml: one JSON object per line, named,
counted and digested in plan.toml's `[runs_file]` table.

A plan of a few thousand runs is read on every `status`, `run` and `replan`, on a machine
that has never read it. Read as TOML tables its runs cost about 0.27 s per 6,000 (the
parser works value by value); as JSON lines, 0.05 s. The rest of the plan stays TOML, for
people to read and edit. A line holds a run's fields as plan.toml's tables held them:
`command` left out (it is `argv` as people read it, derived again on reading) and the
fields at their default (`shell = false`, `depends_on = ""`, `max_retries = 0`) too.
The scheduled runs come first, then those held for a replan; the counts say where one
ends.

A copy cut short, or the file of another plan beside this plan.toml, is refused: the file's
SHA-256 must be the one plan.toml names. A person who edits a run deletes `sha256` from
`[runs_file]`; the plan is then read as it stands. A plan.toml that holds its runs as
`[[runs]]` tables (written by hand, or before this file) reads as before.
"""

from __future__ import annotations

import hashlib
import json
import re
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.planfile.plan import Run

NAME = "runs.jsonl"
"""The file the writer names."""
KEY = "runs_file"
"""plan.toml's table naming the file."""
DERIVED = ("command",)
"""Fields never written: derived from the others on reading."""
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}\.jsonl")
_DIGEST = re.compile(r"[0-9a-f]{64}")
_ENTRY = {"name", "runs", "held", "sha256"}
_SURROGATE = re.compile(r"\\u[dD][89a-fA-F]")
_MAX_COUNT = 10_000_000


def _defaults() -> dict[str, Any]:
    return {name: info.default for name, info in Run.model_fields.items()
            if not info.is_required() and info.default is not None}


_DEFAULTS = _defaults()


def compact(run: Mapping[str, Any]) -> dict[str, Any]:
    """A run's fields as the file holds them: derived fields and defaults left out."""
    return {k: v for k, v in run.items()
            if v is not None and k not in DERIVED
            and not (k in _DEFAULTS and v == _DEFAULTS[k] and type(v) is type(_DEFAULTS[k]))}


def text(runs: Iterable[Mapping[str, Any]]) -> str:
    """The file's text: a line per run (as `model_dump(mode="json")` gives them)."""
    return "".join(json.dumps(compact(run), ensure_ascii=False, separators=(",", ":")) + "\n"
                   for run in runs)


def entry(runs: int, held: int, body: str) -> dict[str, Any]:
    """plan.toml's `[runs_file]` table for a file of this text."""
    return {"name": NAME, "runs": runs, "held": held,
            "sha256": hashlib.sha256(body.encode()).hexdigest()}


def _refuse(message: str, path: Path | str, field: str = KEY) -> InputError:
    return InputError(message, file=path, field=field)


def _checked_entry(value: Any, plan_path: Path) -> tuple[str, int, int, str | None]:
    if not isinstance(value, dict):
        raise _refuse("must be a table", plan_path)
    unknown = sorted(set(value) - _ENTRY)
    if unknown:
        raise _refuse(f"unknown key {unknown[0]!r}", plan_path, f"{KEY}.{unknown[0]}")
    name = value.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _refuse("must be a file name beside plan.toml ending in .jsonl (letters, "
                      "digits, `.`, `_`, `-`)", plan_path, f"{KEY}.name")
    counts = []
    for key in ("runs", "held"):
        n = value.get(key)
        if type(n) is not int or not 0 <= n <= _MAX_COUNT:
            raise _refuse("must be a whole number of runs", plan_path, f"{KEY}.{key}")
        counts.append(n)
    digest = value.get("sha256")
    if digest is not None and (not isinstance(digest, str) or not _DIGEST.fullmatch(digest)):
        raise _refuse("must be a SHA-256 in hex (64 digits 0-9, a-f)", plan_path,
                      f"{KEY}.sha256")
    return name, counts[0], counts[1], digest


def read(value: Any, plan_path: Path) -> tuple[Path, list[Any], list[Any]]:
    """(the file, its scheduled runs, its held runs) named by plan.toml's `[runs_file]`
    table `value`: each a dict of the line's fields, checked by the plan's models later.
    Errors are one line naming the file and the field (or line)."""
    name, n_runs, n_held, digest = _checked_entry(value, plan_path)
    # Beside the file itself: a plan.toml linked into another folder keeps its runs where
    # it lives, as its runs do.
    path = plan_path.resolve().parent / name
    try:
        info = path.stat()
    except FileNotFoundError:
        raise _refuse(f"names {name}, which is not beside it: copy the plan's folder "
                      "whole", plan_path, f"{KEY}.name") from None
    except OSError as exc:
        raise _refuse(f"cannot read: {exc.strerror}", path, "") from None
    if not stat.S_ISREG(info.st_mode):  # a FIFO would hang the read
        raise _refuse("is not a regular file", path, "")
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise _refuse(f"cannot read: {exc.strerror}", path, "") from None
    if digest is not None and hashlib.sha256(raw).hexdigest() != digest:
        raise _refuse(f"is not the runs file plan.toml seals (its SHA-256 differs): cut "
                      f"short, or another plan's? copy the plan's folder again; for an edit "
                      f"of your own, delete `sha256` from [{KEY}] in plan.toml", path, "")
    try:
        body = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _refuse("not UTF-8 text", path, "") from None
    lines = body.split("\n")
    if lines[-1] == "":
        lines.pop()
    if len(lines) != n_runs + n_held:
        raise _refuse(f"holds {len(lines)} lines, plan.toml counts {n_runs} runs and "
                      f"{n_held} held: a line per run", path, "")
    rows: list[Any] = []
    for i, line in enumerate(lines):
        where = f"runs[{i}]" if i < n_runs else f"held[{i - n_runs}]"
        try:
            row = json.loads(line)  # NaN or Infinity: named by the plan's checks
        except ValueError as exc:
            raise _refuse(f"line {i + 1} is not a JSON object: {exc}", path, where) from None
        if type(row) is not dict:
            raise _refuse(f"line {i + 1} is not a JSON object", path, where)
        if "\\u" in line and _SURROGATE.search(line):  # text no file or terminal can hold
            raise _refuse(f"line {i + 1} holds a \\uD800-\\uDFFF escape: write the "
                          "character itself", path, where)
        rows.append(row)
    return path, rows[:n_runs], rows[n_runs:]

"""A plan.toml that holds its run tables itself is whole or refused: its header states how
many runs its tables hold and the SHA-256 of their text, and every reading checks both.

Plans are written with their runs in a file of their own (`planfile.runsfile`), which
plan.toml names, counts and digests; this seal is what a plan.toml written before that, or
by `line` for its run tables, carries. A copy interrupted, or a file read while it is
rewritten in place, can end exactly where a run table does; TOML then reads a valid,
smaller plan. Two files spliced can read as one. The seal is a comment line of the header:

    # sealed: 12 runs and 0 kept aside below; SHA-256 of their tables: 3f…

The tables are the text from the first `[[runs]]` (or `[[held]]`) line to the end of the
file, as written. A plan without the line (written before plans were sealed, or whose
author deleted it to keep an edit of the run tables) is read as it stands.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path
from typing import NamedTuple

from planner.errors import InputError

_LINE = re.compile(rb"# sealed: (\d{1,9}) runs and (\d{1,9}) kept aside below; SHA-256 of "
                   rb"their tables: ([0-9a-f]{64})")
_STARTS = (b"\n[[runs]]\n", b"\n[[held]]\n")
_HEAD_LINES = 8
"""The seal is among the comment lines the file starts with; no further is looked."""


class Seal(NamedTuple):
    """What a plan's header states about its run tables."""

    runs: int
    """Runs scheduled (`[[runs]]` tables)."""
    held: int
    """Runs held for a replan (`[[held]]` tables)."""
    digest: str
    """SHA-256 of the tables' text, in hex."""


def line(runs: int, held: int, tables: str) -> str:
    """The seal's comment line (with its line break) for these tables as written."""
    digest = hashlib.sha256(tables.encode()).hexdigest()
    return (f"# sealed: {runs} runs and {held} kept aside below; SHA-256 of their tables: "
            f"{digest}\n")


def tables_at(raw: bytes) -> int:
    """Where the run tables begin in plan.toml's bytes (its length when there are none)."""
    at = len(raw)
    for start in _STARTS:  # runs come first: held tables are looked for before them only
        found = raw.find(start, 0, at)
        at = found if found >= 0 else at
    return at


def read(raw: bytes) -> Seal | None:
    """The seal the file's opening comment lines hold, or None."""
    for text in raw[:4096].split(b"\n")[:_HEAD_LINES]:
        if not text.startswith(b"#"):
            return None
        found = _LINE.fullmatch(text.rstrip(b"\r"))
        if found:
            return Seal(int(found[1]), int(found[2]), found[3].decode())
    return None


_ADVICE = ("cut short or spliced from two files? copy it again from where it was exported; "
           "for an edit of your own, delete the `# sealed:` line")


def check_digest(raw: bytes, path: str | Path) -> Seal | None:
    """The file's seal, once its tables' text is found to be what it names; one line
    naming the file otherwise."""
    seal = read(raw)
    if seal is None:
        return None
    digest = hashlib.sha256(memoryview(raw)[tables_at(raw):]).hexdigest()
    if digest != seal.digest:
        raise InputError(f"its run tables are not the ones its header seals (their SHA-256 "
                         f"differs): {_ADVICE}", file=path, field="runs")
    return seal


def check_counts(seal: Seal | None, runs: int, held: int, path: str | Path) -> None:
    """The runs read are as many as the seal states."""
    if seal is None or (seal.runs, seal.held) == (runs, held):
        return
    raise InputError(f"its header states {seal.runs} runs and {seal.held} kept aside, its "
                     f"tables hold {runs} and {held}: {_ADVICE}", file=path, field="runs")


def unsealed(text: str) -> str:
    """`text` without its seal line: what an author does to keep an edit of the run
    tables (the plan is then read as it stands)."""
    return "".join(x for x in text.splitlines(keepends=True) if not x.startswith("# sealed: "))

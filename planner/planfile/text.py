"""The runs of plan.toml as text: one line per field, each array on one line, and nothing
written twice.

A large plan holds a hundred thousand runs, and every `status` or `run` on a machine that
has not read it before parses and checks all of them. Parsing costs per value and per
line, so each run is written once and compactly: `argv` (what runs) on one line, `command`
left out (it is `argv` as people read it, derived again on reading), and the fields still
at their default (`shell = false`, `depends_on = ""`, `max_retries = 0`) left out. A plan
written with `command` still reads; its command is then checked against `argv`.

tomli-w writes every array over several lines, one item a line, and has no option to do
otherwise; these tables are therefore written here, by rules whose output the tests parse
back with tomllib for every kind of text. The rest of plan.toml is written by tomli-w.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from planner.planfile.plan import Run
from planner.spec.templates import display

DERIVED = ("command",)
"""Fields never written: derived from the others on reading."""
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# Escaped as tomli-w escapes them (a tab stays as it is): the same text, byte for byte.
_ESCAPE = re.compile(r'[\x00-\x08\x0a-\x1f\x7f"\\]')
_SHORT = {"\b": "\\b", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


def _defaults() -> dict[str, Any]:
    return {name: info.default for name, info in Run.model_fields.items()
            if not info.is_required() and info.default is not None}


_DEFAULTS = _defaults()


def _escape(match: re.Match[str]) -> str:
    c = match.group()
    return _SHORT.get(c) or f"\\u{ord(c):04x}"


def string(s: str) -> str:
    """A TOML basic string of `s` (every control character but tab, and DEL, escaped), as
    tomli-w writes it."""
    if _ESCAPE.search(s) is None:
        return f'"{s}"'
    return '"' + _ESCAPE.sub(_escape, s) + '"'


def key(k: str) -> str:
    """A key as TOML writes it: bare when it may be, else quoted."""
    return k if _BARE_KEY.fullmatch(k) else string(k)


def literal(v: Any) -> str:
    """A TOML value on one line: arrays and tables inline."""
    if isinstance(v, str):
        return string(v)
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        return str(v) if math.isfinite(v) else ("inf" if v > 0 else "-inf")
    if isinstance(v, list | tuple):
        return "[" + ", ".join(map(literal, v)) + "]"
    if isinstance(v, Mapping):
        if not v:
            return "{}"
        return "{ " + ", ".join(f"{key(k)} = {literal(x)}" for k, x in v.items()) + " }"
    raise TypeError(f"a {type(v).__name__} is not written to a plan")


def compact(run: Mapping[str, Any]) -> dict[str, Any]:
    """A run's fields as plan.toml holds them: derived fields and defaults left out."""
    return {k: v for k, v in run.items()
            if v is not None and k not in DERIVED
            and not (k in _DEFAULTS and v == _DEFAULTS[k] and type(v) is type(_DEFAULTS[k]))}


def tables(name: str, runs: Iterable[Mapping[str, Any]]) -> str:
    """`[[name]]` tables of these runs (as `model_dump(mode="json")` gives them)."""
    out: list[str] = []
    for run in runs:
        out.append(f"\n[[{name}]]\n")
        out.extend(f"{key(k)} = {literal(v)}\n" for k, v in compact(run).items())
    return "".join(out)


def expand(runs: Any) -> bool:
    """Fill in, in place, what a run's table leaves out because it is derived: its command,
    from its argument vector. A vector that cannot be shown is named by the plan's checks
    of `argv`, which come first; the empty command put here then matches nothing.

    True when every table was a run's without a command, and each got the command its
    vector shows (then `argv` validates as it stands, and the command matches it)."""
    if not isinstance(runs, list):
        return True
    derived = True
    for run in runs:
        if not isinstance(run, dict) or "command" in run:
            derived = False
            continue
        argv, shell = run.get("argv"), run.get("shell", False)
        shown: Any = ""
        if isinstance(argv, list) and argv and (
                shell is False or (shell is True and len(argv) == 3 and type(argv[2]) is str)):
            try:
                shown = display(argv, shell)
            except TypeError:  # a word that is not text
                shown = ""
        run["command"] = shown
        derived = derived and shown != ""
    return derived

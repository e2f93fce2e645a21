"""TOML values on one line (a run's parameters in its manifest), and a run's command
derived again from its argument vector on reading.

tomli-w writes every array over several lines, one item a line, and has no option to do
otherwise; these values are therefore written here, by rules whose output the tests parse
back with tomllib for every kind of text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from typing import Any

from planner.spec.templates import display

_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
# Escaped as tomli-w escapes them (a tab stays as it is): the same text, byte for byte.
_ESCAPE = re.compile(r'[\x00-\x08\x0a-\x1f\x7f"\\]')
_SHORT = {"\b": "\\b", "\n": "\\n", "\f": "\\f", "\r": "\\r", '"': '\\"', "\\": "\\\\"}


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

"""plan.toml's tables before its runs, read by the TOML parser with their long arrays of
integers read apart.

The header of a large plan is mostly its summary table: each configuration's complete
seeds, up to a thousand of them, one integer a line as the TOML writer spells an array
(`complete_seeds = [`, then `    7,` lines, then `]`). The TOML parser takes a fifth of a
second over a hundred thousand such lines. Each array in exactly that form is read here
(a line of digits is an integer to both), and the parser meets a short text in its place:
a string no plan can hold (it begins with U+0001, which TOML text cannot spell but as an
escape, and the header has none), put back as the array once the tables are read.

`loads` gives exactly what the TOML parser gives for the whole header, or raises the
parser's error: text where a string, a comment or an escape could make the two differ is
read by the parser alone.
"""

from __future__ import annotations

import re
from typing import Any

from planner.tomlio import loads as toml_loads

# An integer of at most 18 digits: inside TOML's 64 bits, written as both grammars do.
_ARRAY = re.compile(r"^([A-Za-z0-9_-]+) = \[\n((?:    -?(?:0|[1-9][0-9]{0,17}),\n)+)\]$",
                    re.MULTILINE)
_MARK = "\x01"
# Where an array's lines could be a string's text, or a string could hold the mark.
_UNSURE = ('"""', "'''", "\\u0001", "\\U00000001")
_SMALLEST = 64
"""Fewest integers an array holds to be read apart (a short one costs the parser little)."""


def loads(text: str) -> dict[str, Any]:
    """The TOML tables of `text`, as the TOML parser reads them (its error if it refuses)."""
    if "    " not in text or any(u in text for u in _UNSURE):
        return toml_loads(text)
    arrays: list[list[int]] = []

    def apart(found: re.Match[str]) -> str:
        lines = found.group(2)
        if lines.count("\n") < _SMALLEST:
            return found.group(0)
        arrays.append(list(map(int, lines.replace(",", "").split())))
        return f'{found.group(1)} = "\\u0001{len(arrays) - 1}"'

    short = _ARRAY.sub(apart, text)
    if not arrays:
        return toml_loads(text)
    data = toml_loads(short)
    put = _put_back(data, arrays)
    if put != len(arrays):  # a mark the text did not get from here: read it whole
        return toml_loads(text)
    return data


def _put_back(value: Any, arrays: list[list[int]]) -> int:
    """Each marked string in `value` (its tables and arrays, in place) replaced by the array
    it stands for; how many there were, -1 for a mark that stands for none."""
    items = value.items() if isinstance(value, dict) else enumerate(value) \
        if isinstance(value, list) else ()
    put = 0
    for key, item in list(items):
        if isinstance(item, str) and item.startswith(_MARK):
            at = item[1:]
            if not (at.isascii() and at.isdigit()) or int(at) >= len(arrays):
                return -1
            value[key] = arrays[int(at)]
            put += 1
        elif isinstance(item, dict | list):
            inner = _put_back(item, arrays)
            if inner < 0:
                return -1
            put += inner
    return put

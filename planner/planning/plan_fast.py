"""plan.toml's run tables read at the speed of JSON, when they are as `plan_text` writes them.

A plan of a hundred thousand runs is two million lines of `key = value`; a TOML parser
written in Python takes seconds over them, on every machine that reads the plan for the
first time (the rented one). Each of those lines, as `plan_text` writes it, is also JSON
once its key is quoted: the values are basic strings, integers, floats, booleans and arrays
of them, which the two grammars spell alike. So the run tables become one JSON text by a few
whole-text replacements and are parsed by the standard library's C parser; the rest of the
file (a few hundred lines) is read by the TOML parser as before.

`parse` returns exactly what the TOML parser returns, or None for any text it cannot be sure
of (then the caller parses the whole file as TOML). Where the grammars differ it does not
guess:
- every line of the run tables must be `bare-key = value` with one ` = ` on it, and each
  line must give exactly one key (counted while parsing): a second key, a table value, a
  duplicate or a multi-line value sends the text to the TOML parser;
- what JSON takes and TOML refuses is looked for first (`\\/`, surrogate escapes, DEL, a
  bare carriage return, `NaN`, `null`);
- integers beyond TOML's 64 bits are not looked for: no field of a plan takes one (the
  plan's checks refuse them, and the caller then reads the file as TOML to say why).
"""

from __future__ import annotations

import json
import re
from typing import Any, NamedTuple

from planner.tomlio import loads

TABLES = ("runs", "held")
"""Arrays of run tables, written last and in this order (`export.plan_toml`)."""
_HEADERS = tuple(f"\n\n[[{name}]]\n" for name in TABLES)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_FIRST_KEY = re.compile(r"[A-Za-z0-9_-]+ = ")
# JSON escapes TOML does not have: `\/`, and UTF-16 surrogates (TOML takes only scalars).
_JSON_ONLY = re.compile(r"\\/|\\u[dD][89a-fA-F]")


class _NotOurs(ValueError):
    """Text the JSON reading cannot vouch for."""


def _constant(name: str) -> Any:
    raise _NotOurs(name)  # NaN and Infinity: TOML spells them otherwise


class Reading(NamedTuple):
    """plan.toml's tables, and what is known of its run tables from their text."""

    data: dict[str, Any]
    """The tables, as the TOML parser reads them."""
    plain: frozenset[str]
    """The arrays of run tables whose text holds no escape (so no string in them holds a
    control character) and no number of 16 digits or more: `plan_rules.value_problem`
    finds nothing in them."""


def parse(text: str) -> dict[str, Any] | None:
    """The TOML tables of `text`, as the TOML parser reads them, or None when `text` is not
    in the form this reading is sure of."""
    reading = read(text)
    return None if reading is None else reading.data


def read(text: str) -> Reading | None:
    """`parse`, with what the run tables' text shows of their values."""
    start = min((i for i in (text.find(h) for h in _HEADERS) if i >= 0), default=-1)
    if start < 0 or not text.endswith("\n"):
        return None
    # Characters TOML refuses outside a string's escapes, and JSON takes (or spells
    # otherwise): looked for over the whole text, where TOML refuses them as well.
    if "\x00" in text or "\r" in text or "\x7f" in text or _JSON_ONLY.search(text, start):
        return None
    try:
        data = loads(text[:start + 1])
    except ValueError:
        return None
    if any(name in data for name in TABLES):
        return None
    plain = set()
    at, end = start + 2, len(text) - 1  # the arrays, without the last line break
    for name in TABLES:
        opening = f"[[{name}]]\n"
        if not text.startswith(opening, at):
            continue
        stop = text.find(_HEADERS[1], at, end) if name == TABLES[0] else -1
        stop = end if stop < 0 else stop
        body = text[at + len(opening):stop]
        try:
            data[name], large = _tables(body, name)
        except (_NotOurs, ValueError, RecursionError):
            return None
        if not large and "\\" not in body:
            plain.add(name)
        at = stop + 2
    return Reading(data, frozenset(plain)) if at >= end else None


def _tables(body: str, name: str) -> tuple[list[dict[str, Any]], bool]:
    """The tables of one array, from the text after its first `[[name]]` line, and whether
    any number in them has 16 digits or more (or is a float of 1e15 or more)."""
    # One NUL (never in TOML text) where each table begins: a line break then cannot be
    # mistaken for one.
    body = body.replace(f"\n\n[[{name}]]\n", "\x00")
    lines = body.count("\n") + body.count("\x00") + 1
    if _FIRST_KEY.match(body) is None or body.count(" = ") != lines:
        raise _NotOurs("a line that is not one key and its value")
    # Each line `key = value` becomes `"key": value`, after a comma where a line ends and
    # between braces where a table does.
    body = body.replace("\n", ',"').replace(" = ", '": ').replace("\x00", '},{"')
    pairs = 0
    keys: set[str] = set()
    large = False

    def integer(digits: str) -> int:
        nonlocal large
        large = large or len(digits) > 15  # a sign counted too: a few false alarms
        return int(digits)

    def real(digits: str) -> float:
        nonlocal large
        value = float(digits)
        large = large or not abs(value) < 1e15
        return value

    def table(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal pairs
        pairs += len(items)
        found = dict(items)
        if len(found) != len(items) or None in found.values():
            raise _NotOurs("a key given twice, or null")
        keys.update(found)
        return found

    rows: list[dict[str, Any]] = json.loads('[{"' + body + "}]", object_pairs_hook=table,
                                            parse_constant=_constant, parse_int=integer,
                                            parse_float=real)
    if pairs != lines:
        raise _NotOurs("a line of more than one key, or a table as a value")
    # Each line gave one key (counted above), and ` = ` is where its value begins: a key
    # that is not bare (a dotted key, a comment, a line led by spaces) is not ours.
    if not all(map(_BARE_KEY.fullmatch, keys)):
        raise _NotOurs("a line that is not a bare key and its value")
    return rows, large

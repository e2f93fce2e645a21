"""plan.toml's run tables read at the speed of JSON, when they are as `planfile.text` writes them.

A plan of a hundred thousand runs is two million lines of `key = value`; a TOML parser
written in Python takes seconds over them, on every machine that reads the plan for the
first time (the rented one). Each of those lines, as `planfile.text` writes it, is also JSON
once its key is quoted: the values are basic strings, integers, floats, booleans and arrays
of them, which the two grammars spell alike. So the run tables become one JSON text by a few
whole-text replacements and are parsed by a compiled JSON parser (pydantic-core's, else the
standard library's); the rest of the file is read by the TOML parser as before.

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
from operator import itemgetter
from typing import Any, NamedTuple

from pydantic_core import from_json

from planner.planning.plan_head import loads

TABLES = ("runs", "held")
"""Arrays of run tables, written last and in this order (`export.plan_toml`)."""
_HEADERS = tuple(f"\n\n[[{name}]]\n" for name in TABLES)
_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_FIRST_KEY = re.compile(rb"[A-Za-z0-9_-]+ = ")
# JSON escapes TOML does not have: `\/`, and UTF-16 surrogates (TOML takes only scalars).
_JSON_ONLY = re.compile(rb"\\/|\\u[dD][89a-fA-F]")


# Every digit as 0 and `E` as `e`: a long number is then a run of 0s, an exponent `0e0`.
_DIGITS = bytes.maketrans(b"123456789E", b"000000000e")
_EXPONENT = re.compile(rb"0e[0+]")
_NUMBER_START = frozenset(b" [,+-")
_EXPONENTS_LOOKED_AT = 1000


class _NotOurs(ValueError):
    """Text the JSON reading cannot vouch for."""


def _constant(name: str) -> Any:
    raise _NotOurs(name)  # NaN and Infinity: TOML spells them otherwise


class Group(NamedTuple):
    """Tables of one array that give the same keys in the same order, a column a key."""

    keys: tuple[str, ...]
    """The keys, in the order each table gives them."""
    columns: list[list[Any]]
    """Each key's values, table by table."""
    at: list[int] | None
    """Where these tables stand in the array; None: they are all of it, in order."""


class Reading(NamedTuple):
    """plan.toml's tables, and what is known of its run tables from their text."""

    data: dict[str, Any]
    """The tables, as the TOML parser reads them (with `columns`: the arrays given there
    left out)."""
    plain: frozenset[str]
    """The arrays of run tables whose text holds no escape (so no string in them holds a
    control character: JSON refuses one written as itself) and, for those in `data`, no
    number of 16 digits or more: `planfile.rules.value_problem` finds nothing in them but, for
    those in `columns`, numbers beyond its bounds."""
    columns: dict[str, list[Group]] = {}
    """Arrays read as columns (`read(..., columns=True)`), group by group."""


def parse(text: str) -> dict[str, Any] | None:
    """The TOML tables of `text`, as the TOML parser reads them, or None when `text` is not
    in the form this reading is sure of."""
    reading = read(text)
    return None if reading is None else reading.data


def read(text: str | bytes, columns: bool = False, runs_until: int | None = None
         ) -> Reading | None:
    """`parse`, with what the run tables' text shows of their values; with `columns`, the
    arrays whose tables come in a few shapes are given as columns (`Reading.columns`),
    never built table by table. `text` may be the file's bytes (UTF-8), which are then
    read where they lie: the run tables' text is never decoded, nor held whole again.
    `runs_until`: where (a `[[runs]]` header's blank line) the tables left to another
    reading begin, up to the array after them; those are then not in the reading."""
    raw = text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass")
    start = min((i for i in (raw.find(h) for h in _HEADERS_UTF8) if i >= 0), default=-1)
    if start < 0 or not raw.endswith(b"\n"):
        return None
    try:
        head = raw[:start + 1].decode()
    except UnicodeDecodeError:
        return None
    # Characters TOML refuses outside a string's escapes, and JSON takes (or spells
    # otherwise): in the tables, looked for in each array's text (`_tables`).
    if _refused(head):
        return None
    try:
        data = loads(head)
    except ValueError:
        return None
    if any(name in data for name in TABLES):
        return None
    plain = set()
    grouped: dict[str, list[Group]] = {}
    at, end = start + 2, len(raw) - 1  # the first header, and the last line break
    if runs_until is not None and not raw.startswith(b"[[runs]]\n", at):
        return None
    for name in TABLES:
        opening = f"[[{name}]]\n".encode()
        if not raw.startswith(opening, at):
            continue
        stop = arrays_end(raw, at) if name == TABLES[0] else end
        until = stop
        if name == TABLES[0] and runs_until is not None:
            if not at < runs_until < stop or not raw.startswith(_HEADERS_UTF8[0], runs_until):
                return None
            until = runs_until
        try:
            tables, plain_text = _tables(raw, at + len(opening), until, name, columns)
        except (_NotOurs, ValueError, TypeError, RecursionError):
            return None
        if columns and isinstance(tables[0], Group):
            grouped[name] = tables  # type: ignore[assignment]
        else:
            data[name] = rows(tables)
        if plain_text:
            plain.add(name)
        at = stop + 2
    return Reading(data, frozenset(plain), grouped) if at >= end else None


def arrays_end(raw: bytes, at: int) -> int:
    """Where the array of runs whose first table begins at `at` ends: the line break
    before the `[[held]]` header that follows it, else the file's last line break."""
    end = len(raw) - 1
    stop = raw.find(_HEADERS_UTF8[1], at, end)
    return end if stop < 0 else stop


def _refused(text: str | bytes) -> bool:
    if isinstance(text, str):
        return "\x00" in text or "\r" in text or "\x7f" in text
    return b"\x00" in text or b"\r" in text or b"\x7f" in text


def array(raw: bytes, start: int, stop: int, name: str) -> tuple[list[Group], bool] | None:
    """The tables of an array of runs as groups of columns, from `raw[start:stop]`: the
    text after one of its headers to the line break that ends its last line (that break
    left out), as `read` gives them; and whether the text holds no escape
    (`Reading.plain`). None for text this reading cannot vouch for, or tables in too many
    shapes."""
    try:
        tables, plain = _tables(raw, start, stop, name, True)
    except (_NotOurs, ValueError, TypeError, RecursionError):
        return None
    if not tables or not isinstance(tables[0], Group):
        return None
    return tables, plain  # type: ignore[return-value]


_HEADERS_UTF8 = tuple(h.encode() for h in _HEADERS)


def rows(tables: list[dict[str, Any]] | list[Group]) -> list[dict[str, Any]]:
    """An array's tables, one dict a table, from its groups of columns."""
    if not tables or not isinstance(tables[0], Group):
        return tables  # type: ignore[return-value]
    out: list[dict[str, Any] | None] = [None] * sum(len(g.columns[0]) for g in tables)
    for keys, cols, where in tables:  # type: ignore[misc]
        made = [dict(zip(keys, values, strict=True)) for values in zip(*cols, strict=True)]
        if where is None:
            return made
        for i, table in zip(where, made, strict=True):
            out[i] = table
    return out  # type: ignore[return-value]


def _tables(raw: bytes, start: int, stop: int, name: str, columns: bool = True
            ) -> tuple[list[dict[str, Any]] | list[Group], bool]:
    """The tables of one array, from `raw[start:stop]` (the text after its first
    `[[name]]` line, to the line break ending its last line): with `columns`, as groups of
    columns when they come in a few shapes, else one dict a table; and whether the text is
    plain (`Reading.plain`)."""
    # The JSON text made in one copy, its brackets around the tables' text, which the
    # replacements below then leave as they are (it holds none of what they replace).
    text = b"".join((b'[{"', memoryview(raw)[start:stop], b"}]"))
    if _refused(text) or _JSON_ONLY.search(text):
        raise _NotOurs("a character or an escape the grammars read otherwise")
    # Each table's lines: every line break but the three of each header between tables.
    header = f"\n\n[[{name}]]\n".encode()
    headers = text.count(header)
    lines = text.count(b"\n") - 2 * headers + 1
    if _FIRST_KEY.match(text, 3) is None or text.count(b" = ") != lines:
        raise _NotOurs("a line that is not one key and its value")
    # Without a brace or a `null` in the text the only objects are the tables made here,
    # and no value is null. Without a colon either, the only colons are the one made on
    # each line: no table can have more members than it has lines, so tables (built as
    # dicts, in C) whose sizes add up to the lines have one key a line and none twice.
    # With a colon each object comes as its list of pairs, counted before they become
    # dicts. A text with a brace or a null is left to a hook that looks at every object.
    simple = text.find(b"{", 2, len(text) - 2) < 0 and b"null" not in text
    colon = b":" in text
    escaped = b"\\" in text
    # Each line `key = value` becomes `"key": value`, between braces where a table begins
    # (the headers first: they hold line breaks) and after a comma where a line ends.
    text = text.replace(header, b'},{"').replace(b"\n", b',"').replace(b" = ", b'": ')
    tables: list[dict[str, Any]] | list[Group]
    long = None
    if simple:
        if colon:
            listed = json.loads(text, object_pairs_hook=list, parse_constant=_constant)
            pairs = sum(map(len, listed))
            made = list(map(dict, listed))
            del listed
            if sum(map(len, made)) != pairs:
                raise _NotOurs("a key given twice")
        else:
            made = _dicts(text)
            pairs = sum(map(len, made))
        shapes = list(map(tuple, made))
        keys = set().union(*set(shapes))
        tables = (_grouped(made, shapes) if columns else None) or made
    else:
        tables, pairs, keys = _hooked(text)
    if pairs != lines:
        raise _NotOurs("a line of more than one key, or a table as a value")
    # Each line gave one key (counted above), and ` = ` is where its value begins: a key
    # that is not bare (a dotted key, a comment, a line led by spaces) is not ours.
    if not all(map(_BARE_KEY.fullmatch, keys)):
        raise _NotOurs("a line that is not a bare key and its value")
    # Read table by table, a plain text also has no number that may be long; as columns,
    # those are looked for a column at a time (`plan_bulk`).
    if not escaped and not (tables and isinstance(tables[0], Group)):
        long = _long_number(text)
    return tables, not escaped and not long


_SHAPES = 8
"""Most groups an array is read as columns in (a plan's runs come in one to three: with or
without an evaluated run, a retry count, a shell)."""


def _grouped(tables: list[dict[str, Any]], shapes: list[tuple[str, ...]]
             ) -> list[Group] | None:
    """Tables (each a dict, with its keys in order in `shapes`) as groups of the tables
    that give the same keys in the same order; None when they come in more than a few
    shapes (then they are read one by one)."""
    if not tables or not shapes[0]:
        return None
    if shapes[0] == shapes[-1] and all(map(shapes[0].__eq__, shapes)):
        parts: list[tuple[list[int] | None, list[dict[str, Any]]]] = [(None, tables)]
        keys = [shapes[0]]
    else:
        where: dict[tuple[str, ...], list[int]] = {}
        for i, shape in enumerate(shapes):
            at = where.get(shape)
            if at is None:
                if len(where) == _SHAPES or not shape:
                    return None
                at = where[shape] = []
            at.append(i)
        keys = list(where)
        parts = [(at, [tables[i] for i in at]) for at in where.values()]
    return [Group(shape, [list(map(itemgetter(k), part)) for k in shape], at)
            for shape, (at, part) in zip(keys, parts, strict=True)]


def _dicts(text: str | bytes) -> Any:
    """A JSON text's values, objects as dicts: by pydantic-core's parser (in Rust, a third
    faster than the standard library's on a plan's runs, the same values to the bit),
    which refuses NaN and Infinity as this reading must, and makes each short text the runs
    repeat once (a fifth less memory); by the standard library's where that parser cannot
    be called so."""
    try:
        return from_json(text, allow_inf_nan=False, cache_strings=True)
    except TypeError:  # a pydantic-core without these options
        return json.loads(text, parse_constant=_constant)


def _hooked(text: bytes) -> tuple[list[dict[str, Any]], int, set[str]]:
    """The tables of a JSON text that may hold objects as values or nulls, the pairs of
    every object counted, and the keys seen."""
    pairs = 0
    keys: set[str] = set()

    def table(items: list[tuple[str, Any]]) -> dict[str, Any]:
        nonlocal pairs
        pairs += len(items)
        found = dict(items)
        if len(found) != len(items) or None in found.values():
            raise _NotOurs("a key given twice, or null")
        keys.update(found)
        return found

    rows = json.loads(text, object_pairs_hook=table, parse_constant=_constant)
    return rows, pairs, keys


def _long_number(body: str | bytes) -> bool:
    """Whether a number in this text may have 16 digits or more, or be a float of 1e15 or
    more: a run of 16 digits, or a number with an exponent not negative. Text that looks
    like one (16 digits in a string) is a false alarm, which only costs the values a
    walk."""
    shape = (body if isinstance(body, bytes) else body.encode("utf-8", "surrogatepass")
             ).translate(_DIGITS)
    if b"0" * 16 in shape:
        return True
    for n, hit in enumerate(_EXPONENT.finditer(shape)):
        at = hit.start()
        while at > 0 and shape[at - 1] in b"0.":
            at -= 1
        # A digit led by a letter is text (`d9e5` in an id), not a number's mantissa.
        if n >= _EXPONENTS_LOOKED_AT or at == 0 or shape[at - 1] in _NUMBER_START:
            return True
    return False

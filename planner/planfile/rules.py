"""The rules a plan read back from plan.toml must keep, beyond each field's own type.

A plan.toml is a file people edit, so it is input like a preset: what names files, what
is shown in the terminal and what is started is checked again on reading, before anything
runs or is exported. Every string is free of control characters (a line break in an id
would become a line of a generated script, or garble `status`), except the command and
its script, which may hold the template's own line breaks but never a NUL.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

from planner.spec import bounds
from planner.spec.printable import CONTROL, PROBLEM
from planner.spec.templates import SHELL, display

if TYPE_CHECKING:
    from planner.planfile.plan import Run

FACTORS = r"^([A-Za-z_][A-Za-z0-9_.-]{0,63}(\+[A-Za-z_][A-Za-z0-9_.-]{0,63})*)?$"
"""A run's factor: empty, one factor name, or several joined by `+`."""
FACTORS_CHARS = 65 * 1000
VALUE_CHARS = 1025 * 1000
"""Longest value: a factor's text, or several joined by `+`."""
ARGV_WORDS = 100_000
"""Most words a command may have (a template of at most 8192 characters and overrides)."""
NUMBER_LIMIT = 1e15
"""No number of a plan is larger, seeds apart (they share the preset's 64-bit bound)."""
_CONTROL = CONTROL
_SCRIPT_FIELDS = ("command", "argv")
_RUN_TABLES = ("runs", "held")
"""Arrays of runs (a replan keeps the runs it left out in `held`): their scripts may hold
the template's own line breaks."""
_RUN_PREFIXES = tuple(f"{name}[" for name in _RUN_TABLES)


def check_created(v: str) -> str:
    """An ISO 8601 time, as the planner writes it."""
    try:
        datetime.fromisoformat(v)
    except ValueError:
        raise ValueError(f"{v[:40]!r} is not an ISO 8601 time") from None
    return v


def check_value(v: Any) -> Any:
    """A factor value: a finite number, or text of bounded length."""
    if isinstance(v, float) and not math.isfinite(v):
        raise ValueError("not a finite number")
    if isinstance(v, str) and len(v) > VALUE_CHARS:
        raise ValueError(f"longer than {VALUE_CHARS} characters")
    return v


DERIVED_COMMANDS = "derived commands"
"""Validation context key: True when every run's command was just derived from its
argument vector (`text.expand`), so it matches by construction."""


def check_run(run: Run, derived: bool = False) -> None:
    """A run's times in order and its command the argument vector it shows (not compared
    again when the command was `derived` from it)."""
    if run.end_h < run.start_h:
        raise ValueError(f"@end_h: ends at hour {run.end_h:g}, before it starts "
                         f"({run.start_h:g})")
    if not run.argv[0]:
        raise ValueError("@argv: the program to start is empty")
    if run.shell and (len(run.argv) != 3 or tuple(run.argv[:2]) != SHELL):
        raise ValueError(f"@argv: a shell command is {list(SHELL)} and its script")
    words = "".join(run.argv)
    if not run.shell and ("\n" in words or "\r" in words):
        raise ValueError("@argv: an argument holds a line break")
    if not derived and display(run.argv, run.shell) != run.command:
        raise ValueError("@command: does not match argv, which is what runs; edit argv "
                         "(and command to match), or plan again")


def check_plan_runs(runs: Iterable[Run], ids: set[str], cards: int) -> None:
    """Runs on the rented cards, evaluating runs of the same plan."""
    for i, run in enumerate(runs):
        if max(run.card) >= cards:
            raise ValueError(f"@runs[{i}].card: card {max(run.card)} of {cards} rented "
                             "(cards are counted from 0)")
        if run.depends_on and run.depends_on not in ids:
            raise ValueError(f"@runs[{i}].depends_on: {run.depends_on} is not a run of "
                             "this plan")


def check_held_runs(held: Iterable[Run], ids: set[str], cards: int) -> None:
    """Runs kept whole beside the schedule: ids of their own, on the rented cards,
    evaluating runs of the plan or held with them."""
    held = list(held)
    own = {r.id for r in held}
    for i, run in enumerate(held):
        if run.id in ids:
            raise ValueError(f"@held[{i}].id: run id {run.id} is used twice")
        ids.add(run.id)
        if max(run.card) >= cards:
            raise ValueError(f"@held[{i}].card: card {max(run.card)} of {cards} rented "
                             "(cards are counted from 0)")
        if run.depends_on and run.depends_on not in ids | own:
            raise ValueError(f"@held[{i}].depends_on: {run.depends_on} is not a run of "
                             "this plan")


def value_problem(data: Any, where: str = "") -> tuple[str, str] | None:
    """The first value in an edited plan no model should meet: a number that is not finite
    or is far beyond any plan's, or text with a control character."""
    if where or not isinstance(data, dict):
        return _walk(data, where)
    for k, v in data.items():
        if isinstance(v, list) and v and all(type(t) is dict for t in v):
            # Arrays of tables (the runs): each table checked at once, and walked value by
            # value, naming the key, only when something in it is found wrong.
            script = k in _RUN_TABLES
            for i, table in enumerate(v):
                if not _clean(table, script):
                    found = _walk(table, f"{k}[{i}]")
                    if found:
                        return found
            continue
        found = _walk(v, str(k))
        if found:
            return found
    return None


@functools.lru_cache(maxsize=4096)
def _limit(key: str) -> float:
    return bounds.SEED_LIMIT if "seed" in key.rsplit(".", 1)[-1] else NUMBER_LIMIT


def _clean(table: dict[str, Any], script: bool) -> bool:
    """True when `_walk` would find nothing in this table of plain values; False when it
    may (then it names what)."""
    texts: list[str] = []
    scripts: list[str] = []
    for k, v in table.items():
        kind = type(v)
        if kind is list:
            if all(type(x) is str for x in v):
                v, kind = "".join(v), str
            elif all(type(x) is int for x in v):
                if v and max(max(v), -min(v)) > _limit(k):
                    return False
                continue
            else:
                return False
        if kind is str:
            (scripts if script and k.startswith(_SCRIPT_FIELDS) else texts).append(v)
        elif kind is int or kind is float:
            if not abs(v) <= _limit(k):  # nan and inf too
                return False
        elif kind is not bool and v is not None:  # None: a field the file leaves out
            return False
    return _CONTROL.search("".join(texts)) is None and "\0" not in "".join(scripts)


def _walk(data: Any, where: str) -> tuple[str, str] | None:
    stack: list[tuple[str, Any]] = [(where, data)]
    while stack:
        key, value = stack.pop()
        if isinstance(value, dict):
            stack.extend((f"{key}.{k}" if key else str(k), v)
                         for k, v in reversed(value.items()))
        elif isinstance(value, list):
            # A long list of whole numbers in bounds (a plan's seeds): nothing to name.
            if len(value) > 1 and set(map(type, value)) == {int} \
                    and max(map(abs, value)) <= _limit(key):
                continue
            stack.extend((f"{key}[{i}]", v) for i, v in reversed(list(enumerate(value))))
        elif isinstance(value, str):
            found = _text_problem(key, value)
            if found:
                return key, found
        elif isinstance(value, float) and not math.isfinite(value):
            return key, "not a finite number"
        elif isinstance(value, int | float) and not isinstance(value, bool) \
                and abs(value) > _limit(key):
            return key, "a number far beyond any plan's"
    return None


def _text_problem(key: str, value: str) -> str | None:
    if "\0" in value:
        return "holds a NUL character"
    script = key.startswith(_RUN_PREFIXES) \
        and key.split(".", 1)[-1].startswith(_SCRIPT_FIELDS)
    if not script and _CONTROL.search(value):
        return PROBLEM
    return None

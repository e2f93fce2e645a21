"""A plan's runs built from their columns: every rule a run is read by, a column at a time.

Reading back a plan of a hundred thousand runs as one pydantic model a table costs
seconds: each of its two million values is checked on its own, through the field's schema,
its validators and the run's own checks. Here the same rules meet each column at once:

- the field's type and bounds through pydantic itself, one adapter a field, in one call a
  column (a column of text vectors whose every word is text is checked on its shortest and
  longest vector only: its bounds are on the length);
- each field validator and each of the run's own checks, as the model calls them: on a
  whole column at once where the rule has a form for that (`paths.run_ids_fine`,
  `paths.run_paths_fine`, `planfile.rules.values_fine`, `planfile.rules.runs_fine`: True only when
  no value can fail), else on each value or run; the plan's checks over all of them, at
  once where they can be (`planfile.rules.plan_runs_fine`);
- what `planfile.rules.value_problem` looks for, a column at a time (`clean_column`).

Anything it cannot vouch for (a field missing, a key it does not know, any rule refused)
gives None, and the plan is read table by table, which names what is wrong. The text the
runs repeat is kept once (`_share_text`).
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from itertools import chain, repeat
from typing import Annotated, Any, NamedTuple, get_args, get_origin

from annotated_types import MaxLen, MinLen
from pydantic import ConfigDict, TypeAdapter

from planner.planfile.plan import Plan, Run
from planner.planfile.rules import (
    DERIVED_COMMANDS,
    clean_column,
    plan_runs_fine,
    runs_fine,
    values_fine,
)
from planner.planning.plan_fast import Group
from planner.spec.paths import run_ids_fine, run_paths_fine
from planner.spec.templates import display_all

FIELDS = tuple(Run.model_fields)
"""A run's fields, in the model's order (the order validation gives them)."""
_FIELD_SET = frozenset(FIELDS)
_EVERY_FIELD_SET = set(FIELDS)
"""A run's `__pydantic_fields_set__`: every field, shared by the runs built here."""
_RUN_TABLES = ("runs", "held")
_SCALARS = (type(None), bool, int, float, str)

# The validators a column is looked at by at once: True when none of its values can fail
# the validator named (which then gives each value back as it is); False sends each value
# through it. A validator not named here meets each value.
_FIELDS_AT_ONCE: dict[str, Callable[[list[Any]], bool]] = {
    "_id": run_ids_fine,
    "_depends": lambda ids: run_ids_fine([i for i in ids if i]),
    "_path": run_paths_fine,
    "_value": values_fine,
}
_RUNS_AT_ONCE: dict[str, Callable[[dict[str, list[Any]], bool, bool], bool]] = {
    "_consistent": runs_fine,
}
_PLAN_AT_ONCE: dict[str, Callable[[Plan], bool]] = {
    "_unique_ids": lambda p: plan_runs_fine(p.runs, p.held, p.campaign.cards),
}
_set = object.__setattr__
_new = Run.__new__
_REFUSED = (ValueError, TypeError, AssertionError, AttributeError, KeyError)
"""What a rule raises to refuse a value (pydantic takes an assertion as one), or meets in
a value it was not written for: the tables then say what."""


def construct(values: dict[str, Any]) -> Run:
    """A Run of every field's value (checked already, all runs at once), as
    `model_construct` builds it without its per-call look at the names."""
    run = _new(Run)
    _set(run, "__dict__", values)
    # Shared: every field is set in every run, so no change can add to it (a copy of a run
    # copies it first).
    _set(run, "__pydantic_fields_set__", _EVERY_FIELD_SET)
    _set(run, "__pydantic_extra__", None)
    _set(run, "__pydantic_private__", None)
    return run


class _Info(NamedTuple):
    """What a model validator is told of the validation: its context."""

    context: Any


@functools.cache
def _adapter(field: str) -> TypeAdapter[list[Any]]:
    info = Run.model_fields[field]
    kind = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
    # Strict, as a plan read back is (`export._checked`): each value of its field's type.
    return TypeAdapter(list[kind], config=ConfigDict(strict=True))  # type: ignore[valid-type]


@functools.cache
def _by_length(field: str) -> bool:
    """Whether the field is a list of plain text bounded only on its length (False for a
    key that is no field)."""
    info = Run.model_fields.get(field)
    return info is not None and get_origin(info.annotation) is list \
        and get_args(info.annotation) == (str,) \
        and all(isinstance(m, MinLen | MaxLen) for m in info.metadata)


class _Rules(NamedTuple):
    fields: list[tuple[str, Callable[[Any], Any], tuple[str, ...]]]
    runs: list[tuple[str, Callable[..., Any], bool]]
    plan: list[tuple[str, Callable[..., Any], bool]]


def _takes_info(fn: Callable[..., Any]) -> bool:
    return len(inspect.signature(fn).parameters) > 1


@functools.cache
def _rules() -> _Rules | None:
    """The models' validators, as pydantic calls them; None when one is of a kind this
    reading does not call (before, wrap or plain)."""
    found = Run.__pydantic_decorators__
    plans = Plan.__pydantic_decorators__
    modes = [*(d.info.mode for d in found.field_validators.values()),
             *(d.info.mode for d in found.model_validators.values()),
             *(d.info.mode for d in plans.model_validators.values())]
    if any(mode != "after" for mode in modes) or any(
            set(d.info.fields) & set(_RUN_TABLES) for d in plans.field_validators.values()):
        return None
    fields = [(name, getattr(Run, name), d.info.fields)
              for name, d in found.field_validators.items()]
    runs = [(name, d.func, _takes_info(d.func)) for name, d in found.model_validators.items()]
    plan = [(name, d.func, _takes_info(d.func))
            for name, d in plans.model_validators.items()]
    return _Rules(fields, runs, plan)


def plan(head: dict[str, Any], arrays: dict[str, list[Group]],
         plain: frozenset[str] | set[str] = frozenset(), share: bool = True) -> Plan | None:
    """The plan of these tables (`head`) and arrays of runs (as columns), every rule kept;
    None when it cannot vouch for them. The arrays named in `plain` hold no escape (so no
    text of theirs holds a control character); `share`: the text the runs repeat is kept
    once (`_share_text`)."""
    built = runs_of(arrays, plain, share)
    return None if built is None else assemble(head, *built)


def runs_of(arrays: dict[str, list[Group]], plain: frozenset[str] | set[str] = frozenset(),
            share: bool = True) -> tuple[dict[str, list[Run]], bool] | None:
    """Each array's runs (`array_runs`), and whether every run's command was derived from
    its vector; None when it cannot vouch for them."""
    made: dict[str, list[Run]] = {}
    derived = True
    for name, groups in arrays.items():
        built = array_runs(groups, name in plain, share) if name in _RUN_TABLES else None
        if built is None:
            return None
        made[name], derived_here = built
        derived = derived and derived_here
    return made, derived


def array_runs(groups: list[Group], plain: bool, share: bool = True
               ) -> tuple[list[Run], bool] | None:
    """The runs of an array's groups of columns, each checked by every rule a run is read
    by (the plan's own checks, over all its runs, are `assemble`'s), and whether each one's
    command was derived from its vector; None when it cannot vouch for them."""
    rules = _rules()
    return None if rules is None else _array(groups, rules, plain, share)


def assemble(head: dict[str, Any], made: dict[str, list[Run]], derived: bool
             ) -> Plan | None:
    """The plan of these tables and these runs (from `array_runs`), checked by the plan's
    own rules; `derived`: every run's command was derived from its vector."""
    rules = _rules()
    if rules is None or any(name in head for name in _RUN_TABLES) \
            or not set(made) <= set(_RUN_TABLES):
        return None
    context = {DERIVED_COMMANDS: derived}
    try:
        top = Plan.model_validate({**head, "runs": [], "held": []}, strict=True,
                                  context=context)
        whole = top.model_copy(update={"runs": made.get("runs", []),
                                       "held": made.get("held", [])})
        for name, check, with_info in rules.plan:
            all_fine = _PLAN_AT_ONCE.get(name)
            if all_fine is None or not all_fine(whole):
                check(whole, _Info(context)) if with_info else check(whole)
    except _REFUSED:  # a ValidationError is a ValueError
        return None
    return whole


def _array(groups: list[Group], rules: _Rules, plain: bool, share: bool
           ) -> tuple[list[Run], bool] | None:
    """An array's runs, and whether each one's command was derived from its vector."""
    out: list[Run | None] = [None] * sum(len(g.columns[0]) for g in groups)
    derived = True
    for group in groups:
        built = _group(group, rules, plain, share)
        if built is None:
            return None
        runs, derived_here = built
        derived = derived and derived_here
        if group.at is None:
            return runs, derived
        for i, run in zip(group.at, runs, strict=True):
            out[i] = run
    return out, derived  # type: ignore[return-value]


def _group(group: Group, rules: _Rules, plain: bool, share: bool
           ) -> tuple[list[Run], bool] | None:
    keys, columns = group.keys, dict(zip(group.keys, group.columns, strict=True))
    # A plan written before vectors were recorded is named by the table-by-table reading.
    if not set(keys) <= _FIELD_SET or "argv" not in columns:
        return None
    if not _clean(group, plain):
        return None
    n = len(group.columns[0])
    derived = "command" not in columns
    # A command is derived from the shell flag as written (`planfile.text.expand`): a flag
    # the schema would take as one (`"yes"`) derives none, and is left to the tables.
    if derived and "shell" in columns and set(map(type, columns["shell"])) != {bool}:
        return None
    context = {DERIVED_COMMANDS: derived}
    texts: dict[str, str] = {}
    try:
        for field in FIELDS:
            if field in columns:
                columns[field] = _checked(field, columns[field], texts)
            elif field != "command" or not derived:
                info = Run.model_fields[field]
                default = info.get_default(call_default_factory=True)
                if info.is_required() or type(default) not in _SCALARS:
                    return None
                columns[field] = [default] * n
        if derived:
            columns["command"] = _commands(columns["argv"], columns["shell"], texts)
        for name, check, names in rules.fields:
            at_once = _FIELDS_AT_ONCE.get(name)
            for field in names:
                if at_once is None or not at_once(columns[field]):
                    columns[field] = list(map(check, columns[field]))
    except _REFUSED:
        return None
    if share:
        _share_text(columns)
    rows = zip(*(columns[f] for f in FIELDS), strict=True)
    runs = list(map(construct, map(dict, map(zip, repeat(FIELDS, n), rows))))
    try:
        for name, check, with_info in rules.runs:
            all_fine = _RUNS_AT_ONCE.get(name)
            if all_fine is None or not all_fine(columns, derived, plain):
                told = _Info(context)
                for run in runs:
                    check(run, told) if with_info else check(run)
    except _REFUSED:
        return None
    return runs, derived


def clean(groups: list[Group], plain: bool) -> bool:
    """True when `planfile.rules.value_problem` finds nothing in these groups of an array of
    runs (`plain`: its text holds no escape)."""
    return all(_clean(group, plain) for group in groups)


def _clean(group: Group, plain: bool) -> bool:
    # What `value_problem` looks for: in text without an escape, only numbers beyond bounds.
    for k, v in zip(group.keys, group.columns, strict=True):
        kinds = set(map(type, v))
        # Text or text vectors the schema takes only as text: numbers cannot stand there.
        if plain and (kinds == {str} or (kinds == {list} and _by_length(k))):
            continue
        if not clean_column(k, v, script=True):
            return False
    return True


def _commands(vectors: list[list[str]], shells: list[bool], texts: dict[str, str]
              ) -> list[str]:
    """Each run's command as its vector shows it (a shell's: its script). Raises
    ValueError where a shell's vector is not the shell and one script."""
    if not any(shells):
        return display_all(vectors, texts.get("argv"))
    if any(len(v) != 3 for v, shell in zip(vectors, shells, strict=True) if shell):
        raise ValueError("a shell's vector is the shell, `-c` and the script")
    execs = iter(display_all([v for v, shell in zip(vectors, shells, strict=True)
                              if not shell]))
    return [v[2] if shell else next(execs) for v, shell in zip(vectors, shells, strict=True)]


def _checked(field: str, column: list[Any], texts: dict[str, str]) -> list[Any]:
    """The column as the field's schema validates it; raises ValidationError. A column of
    text vectors leaves its words' text in `texts`."""
    if _by_length(field) and set(map(type, column)) == {list}:
        try:  # every word is text (else joining them fails) ...
            texts[field] = "".join(chain.from_iterable(column))
        except TypeError:
            pass
        else:  # ... and only the bounds on the length are left to check
            _adapter(field).validate_python([min(column, key=len), max(column, key=len)])
            return column
    return _adapter(field).validate_python(column)


def _share_text(columns: dict[str, list[Any]]) -> None:
    """Each text the runs repeat (a variant's name, a vector's words, the run's own folder
    named in its vector) kept once, as in the plan that was written: a JSON reading makes
    each its own. It costs a few tenths of a second once, and saves as much on every later
    read of the checked plan from the cache (its entry is a quarter smaller)."""
    memo: dict[str, str] = {}
    keep = memo.setdefault
    vectors = []
    for field, column in columns.items():
        if not column or field == "command":  # the vector's words joined: its own
            continue
        if _by_length(field) and type(column[0]) is list:
            vectors.append(field)
        elif set(map(type, column)) == {str}:
            columns[field] = list(map(keep, column, column))
    for field in vectors:
        columns[field] = [list(map(keep, words, words)) for words in columns[field]]

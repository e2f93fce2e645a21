"""Writing `plan.toml` and `order.toml`: deterministic text, atomic files."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.errors import InputError, from_validation
from planner.planfile import seal as plan_seal
from planner.planfile import text as plan_text
from planner.planfile.order import Order
from planner.planfile.plan import Plan
from planner.planfile.replace import replace_together
from planner.planfile.rules import DERIVED_COMMANDS, clean_column, value_problem
from planner.planning import plan_bulk, plan_cache, plan_fast, plan_split
from planner.tomlio import dumps, parse_toml, read_bytes

HEADER_PLAN = ("# campaign-planner plan: runs in plan order, times in hours from the window's "
               "start.\n# Run it on the rented machine; every figure's provenance is in "
               "[assumptions].\n\n")
HEADER_ORDER = "# campaign-planner rental order matching the plan with the same plan_id.\n\n"


RUN_TABLES = ("runs", "held")
"""Arrays of runs, written one compact table per run (`planfile.text`)."""


def plan_toml(plan: Plan, path: str | Path | None = None) -> str:
    """`plan.toml` text; the same plan always gives the same bytes. A plan its reading
    would refuse (a control character in a name from an input the planner took as it
    was) is refused here, naming `path` and the field: nothing is written, and the cache
    of checked plans never holds it."""
    data = plan.model_dump(mode="json")
    runs = {name: data.pop(name) for name in RUN_TABLES if data.get(name)}
    problem = value_problem(data) or _runs_problem(runs)
    if problem:
        raise InputError(problem[1], file=path, field=problem[0])
    tables = "".join(plan_text.tables(name, rows) for name, rows in runs.items())
    seal = plan_seal.line(len(plan.runs), len(plan.held), tables)
    return HEADER_PLAN.removesuffix("\n") + seal + "\n" + dumps(data) + tables


def _runs_problem(runs: dict[str, list[dict[str, Any]]]) -> tuple[str, str] | None:
    """What `value_problem` finds in the run tables, looked at a field's column at a time
    (a large plan's hundred thousand runs), and run by run only where a column is in doubt."""
    for name, rows in runs.items():
        keys = rows[0].keys()
        # None is a field left out of the file (a training run's `shard`): nothing to look at.
        if all(r.keys() == keys for r in rows) and all(
                clean_column(k, [v for r in rows if (v := r[k]) is not None], script=True)
                for k in keys):
            continue
        problem = value_problem({name: rows})
        if problem:
            return problem
    return None


def order_toml(order: Order) -> str:
    """`order.toml` text."""
    return HEADER_ORDER + dumps({"order": order.model_dump(mode="json")})


def write_exports(out_dir: str | Path, plan: Plan, order: Order, *,
                  force: bool = False, extra: Sequence[Path] = ()) -> list[Path]:
    """Write both files into `out_dir`, with the finished files `extra` (a corpus's shard
    list) moved in beside them, as a unit: all are replaced, or none (a full disk, a file
    that would be overwritten without `force`)."""
    out = Path(out_dir).expanduser()  # as given: a relative folder is shown relative
    text = plan_toml(plan, out / "plan.toml")
    targets = [(out / "plan.toml", text), (out / "order.toml", order_toml(order))]
    moves = [(out / p.name, p) for p in extra]
    replace_together(out, targets, moves, force=force)
    plan_cache.store(text.encode(), plan)
    return [p for p, _ in targets] + [p for p, _ in moves]


def read_plan(path: str | Path) -> Plan:
    """A `plan.toml` read back into a Plan; errors name the file and the field. Bytes this
    planner has read (or written) before come from the cache of checked plans."""
    raw = read_bytes(path)
    cached = plan_cache.load(raw)
    if cached is not None:
        # An entry is kept under these very bytes only once they were read and checked in
        # full, their seal too (or written here, sealed): the digest is not taken again.
        plan_seal.check_counts(plan_seal.read(raw), len(cached.runs), len(cached.held), path)
        # A large plan is millions of objects kept for the whole command: out of the
        # collector's reach, later passes over the young objects do not walk them again.
        gc.freeze()
        return cached
    # Reading makes millions of objects that all live on (the parsed tables, then the
    # runs): the collector's passes over them would free nothing and cost seconds.
    enabled = gc.isenabled()
    gc.disable()
    try:
        plan = _read_in_full(raw, path)
    finally:
        if enabled:
            gc.enable()
    gc.freeze()
    return plan


def _read_in_full(raw: bytes, path: str | Path) -> Plan:
    # The run tables as plan.toml writes them are read at the speed of JSON; the reading
    # gives what the TOML parser gives, or nothing. A plan it reads and the checks then
    # refuse is read again by the TOML parser, so the error named is the same either way.
    # A large plan's tables are cut in two, read by two processes at once where there are
    # two processors (`plan_split`); else, or when that cannot vouch for them, by this one.
    plan = plan_split.read(raw, share=plan_cache.folder() is not None)
    reading = plan_fast.read(raw, columns=True) if plan is None else None
    if reading is not None:
        plan = _bulk(reading)
        if plan is None:
            data = {**reading.data, **{name: plan_fast.rows(groups)
                                       for name, groups in reading.columns.items()}}
            # Arrays without an escape whose numbers are in bounds: nothing to walk.
            plain = {name for name in reading.plain if name not in reading.columns
                     or plan_bulk.clean(reading.columns[name], True)}
            with contextlib.suppress(InputError):
                plan = _checked(data, path, plain)
            del data
        del reading
    if plan is None:
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InputError("not UTF-8 text", file=path) from None
        plan = _checked(parse_toml(text, path), path)
    # After the values' checks: an edit that breaks a field is named by its field.
    plan_seal.check_counts(plan_seal.read(raw), len(plan.runs), len(plan.held), path)
    plan_seal.check_digest(raw, path)
    plan_cache.store(raw, plan)
    return plan


def _bulk(reading: plan_fast.Reading) -> Plan | None:
    """The plan of a reading whose runs came as columns, checked a column at a time
    (`plan_bulk`), when nothing there is in doubt."""
    if not reading.columns or value_problem(reading.data):
        return None
    # The text the runs repeat kept once only where the plan is cached: there it makes
    # every later read faster than it costs now.
    return plan_bulk.plan(reading.data, reading.columns, reading.plain,
                          share=plan_cache.folder() is not None)


def _checked(data: dict[str, Any], path: str | Path, plain: Collection[str] = ()) -> Plan:
    """The plan of these tables, checked: errors name the file and the field. The arrays
    named in `plain` hold no value `value_problem` looks for."""
    runs = data.get("runs")
    if isinstance(runs, list) and runs and isinstance(runs[0], dict) and "argv" not in runs[0] \
            and "command" in runs[0]:
        raise InputError("written before plans recorded each command's argument vector: "
                         "plan the preset again", file=path, field="runs[0].argv")
    derived = [plan_text.expand(data.get(name)) for name in RUN_TABLES]
    problem = value_problem(data, plain=plain)
    if problem:
        raise InputError(problem[1], file=path, field=problem[0])
    try:
        # Commands just derived from their vectors match them: not derived twice. Each
        # value of the type its field names, as a preset's are: nothing coerced.
        return Plan.model_validate(data, strict=True, context={DERIVED_COMMANDS: all(derived)})
    except ValidationError as exc:
        raise from_validation(exc, path) from None

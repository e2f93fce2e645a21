"""Writing `plan.toml` and `order.toml`: deterministic text, atomic files."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.errors import InputError, from_validation
from planner.planfile import seal as plan_seal
from planner.planfile import text as plan_text
from planner.planfile.order import Order
from planner.planfile.plan import Plan
from planner.planfile.replace import replace_together
from planner.planfile.rules import DERIVED_COMMANDS, value_problem
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
    was) is refused here, naming `path` and the field: nothing is written."""
    data = plan.model_dump(mode="json")
    runs = {name: data.pop(name) for name in RUN_TABLES if data.get(name)}
    problem = value_problem({**data, **runs})
    if problem:
        raise InputError(problem[1], file=path, field=problem[0])
    tables = "".join(plan_text.tables(name, rows) for name, rows in runs.items())
    seal = plan_seal.line(len(plan.runs), len(plan.held), tables)
    return HEADER_PLAN.removesuffix("\n") + seal + "\n" + dumps(data) + tables


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
    return [p for p, _ in targets] + [p for p, _ in moves]


def read_plan(path: str | Path) -> Plan:
    """A `plan.toml` read back into a Plan, checked in full: its values by the TOML parser
    and the models (strict: each value of its field's type), then its seal (the run count
    and the SHA-256 of its run tables). Errors name the file and the field."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=path) from None
    plan = _checked(parse_toml(text, path), path)
    # After the values' checks: an edit that breaks a field is named by its field.
    plan_seal.check_counts(plan_seal.read(raw), len(plan.runs), len(plan.held), path)
    plan_seal.check_digest(raw, path)
    return plan


def _checked(data: dict[str, Any], path: str | Path) -> Plan:
    """The plan of these tables, checked: errors name the file and the field."""
    runs = data.get("runs")
    if isinstance(runs, list) and runs and isinstance(runs[0], dict) and "argv" not in runs[0] \
            and "command" in runs[0]:
        raise InputError("written before plans recorded each command's argument vector: "
                         "plan the preset again", file=path, field="runs[0].argv")
    derived = [plan_text.expand(data.get(name)) for name in RUN_TABLES]
    problem = value_problem(data)
    if problem:
        raise InputError(problem[1], file=path, field=problem[0])
    try:
        # Commands just derived from their vectors match them: not derived twice. Each
        # value of the type its field names, as a preset's are: nothing coerced.
        return Plan.model_validate(data, strict=True, context={DERIVED_COMMANDS: all(derived)})
    except ValidationError as exc:
        raise from_validation(exc, path) from None

"""Writing and reading `plan.toml` with its runs file, and `order.toml`: deterministic
text, atomic files, one checked reader."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from planner.errors import InputError, from_validation
from planner.planfile import runsfile
from planner.planfile import seal as plan_seal
from planner.planfile import text as plan_text
from planner.planfile.order import Order
from planner.planfile.plan import Plan
from planner.planfile.replace import replace_together
from planner.planfile.rules import DERIVED_COMMANDS, value_problem
from planner.tomlio import dumps, parse_toml, read_bytes

HEADER_PLAN = ("# campaign-planner plan. Its runs are in the file [runs_file] names, a line each "
               "in plan order;\n# times are in hours from the window's start. Run it on the "
               "rented machine with its folder\n# copied whole; every figure's provenance is "
               "in [assumptions].\n\n")
HEADER_ORDER = "# campaign-planner rental order matching the plan with the same plan_id.\n\n"


RUN_TABLES = ("runs", "held")
"""Arrays of runs, written to the runs file (`planfile.runsfile`)."""


def plan_texts(plan: Plan, path: str | Path | None = None) -> tuple[str, str]:
    """(`plan.toml` text, `runs.jsonl` text); the same plan always gives the same bytes. A
    plan its reading would refuse (a control character in a name from an input the planner
    took as it was) is refused here, naming `path` and the field: nothing is written."""
    data = plan.model_dump(mode="json")
    runs = {name: data.pop(name, None) or [] for name in RUN_TABLES}
    problem = value_problem({**data, **{k: v for k, v in runs.items() if v}})
    if problem:
        raise InputError(problem[1], file=path, field=problem[0])
    body = runsfile.text([*runs["runs"], *runs["held"]])
    # The first table: where the runs are is the first thing a reader of the file sees.
    head = {runsfile.KEY: runsfile.entry(len(runs["runs"]), len(runs["held"]), body)}
    return HEADER_PLAN + dumps({**head, **data}), body


def plan_toml(plan: Plan, path: str | Path | None = None) -> str:
    """`plan.toml` text alone (its runs are in the runs file it names): what a preview
    shows."""
    return plan_texts(plan, path)[0]


def plan_files(plan: Plan, folder: str | Path) -> list[tuple[Path, str]]:
    """plan.toml and its runs file in `folder`, with their texts: what is written as a
    unit (`replace.replace_together`)."""
    out = Path(folder)
    toml, body = plan_texts(plan, out / "plan.toml")
    return [(out / "plan.toml", toml), (out / runsfile.NAME, body)]


def order_toml(order: Order) -> str:
    """`order.toml` text."""
    return HEADER_ORDER + dumps({"order": order.model_dump(mode="json")})


def write_exports(out_dir: str | Path, plan: Plan, order: Order, *,
                  force: bool = False, extra: Sequence[Path] = ()) -> list[Path]:
    """Write plan.toml, its runs file and order.toml into `out_dir`, with the finished
    files `extra` (a corpus's shard list) moved in beside them, as a unit: all are
    replaced, or none (a full disk, a file that would be overwritten without `force`)."""
    out = Path(out_dir).expanduser()  # as given: a relative folder is shown relative
    targets = [*plan_files(plan, out), (out / "order.toml", order_toml(order))]
    moves = [(out / p.name, p) for p in extra]
    replace_together(out, targets, moves, force=force)
    return [p for p, _ in targets] + [p for p, _ in moves]


def read_plan(path: str | Path) -> Plan:
    """A `plan.toml` read back into a Plan, with the runs of the runs file it names, checked
    in full: its values by the parsers and the models (strict: each value of its field's
    type), and the runs file's SHA-256 and count. A plan.toml that holds its run tables
    itself is checked against its seal (the run count and the tables' SHA-256). Errors
    name the file and the field."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text", file=path) from None
    data = parse_toml(text, path)
    if runsfile.KEY not in data:
        plan = _checked(data, path, path)
        # After the values' checks: an edit that breaks a field is named by its field.
        plan_seal.check_counts(plan_seal.read(raw), len(plan.runs), len(plan.held), path)
        plan_seal.check_digest(raw, path)
        return plan
    for name in RUN_TABLES:
        if name in data:
            raise InputError(f"holds [[{name}]] tables and names a runs file: one or the "
                             "other", file=path, field=name)
    runs_path, data["runs"], data["held"] = runsfile.read(data.pop(runsfile.KEY), Path(path))
    return _checked(data, path, runs_path)


def _checked(data: dict[str, Any], path: str | Path, runs_path: str | Path) -> Plan:
    """The plan of these tables, checked: errors name the file (`runs_path` for a run's
    field) and the field."""
    runs = data.get("runs")
    if isinstance(runs, list) and runs and isinstance(runs[0], dict) and "argv" not in runs[0] \
            and "command" in runs[0]:
        raise InputError("written before plans recorded each command's argument vector: "
                         "plan the preset again", file=runs_path, field="runs[0].argv")
    derived = [plan_text.expand(data.get(name)) for name in RUN_TABLES]
    try:
        problem = value_problem(data)
        if problem:
            raise InputError(problem[1], file=path, field=problem[0])
        try:
            # Commands just derived from their vectors match them: not derived twice. Each
            # value of the type its field names, as a preset's are: nothing coerced.
            return Plan.model_validate(data, strict=True,
                                       context={DERIVED_COMMANDS: all(derived)})
        except ValidationError as exc:
            raise from_validation(exc, path) from None
    except InputError as exc:
        if exc.field.startswith(RUN_TABLES):
            exc.file = str(runs_path)
        raise

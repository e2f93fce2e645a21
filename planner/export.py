"""Writing `plan.toml` and `order.toml`: deterministic text, atomic files."""

from __future__ import annotations

from pathlib import Path

from pydantic import ValidationError

from planner.errors import InputError, from_validation
from planner.order import Order
from planner.plan import Plan
from planner.tomlio import dumps, read_toml, write_all

HEADER_PLAN = ("# campaign-planner plan: runs in plan order, times in hours from the window's "
               "start.\n# Run it on the rented machine; every figure's provenance is in "
               "[assumptions].\n\n")
HEADER_ORDER = "# campaign-planner rental order matching the plan with the same plan_id.\n\n"


def plan_toml(plan: Plan) -> str:
    """`plan.toml` text; the same plan always gives the same bytes."""
    return HEADER_PLAN + dumps(plan.model_dump(mode="json"))


def order_toml(order: Order) -> str:
    """`order.toml` text."""
    return HEADER_ORDER + dumps({"order": order.model_dump(mode="json")})


def write_exports(out_dir: str | Path, plan: Plan, order: Order, *,
                  force: bool = False) -> list[Path]:
    """Write both files into `out_dir`; nothing is written if either would overwrite
    an existing file without `force`."""
    out = Path(out_dir)
    if out.exists() and not out.is_dir():
        raise InputError("exists and is not a folder", file=out, field="--out")
    targets = [(out / "plan.toml", plan_toml(plan)), (out / "order.toml", order_toml(order))]
    write_all(targets, force=force)
    return [p for p, _ in targets]


def read_plan(path: str | Path) -> Plan:
    """A `plan.toml` read back into a Plan; errors name the file and the field."""
    data = read_toml(path)
    try:
        return Plan.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, path) from None

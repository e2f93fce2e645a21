"""Errors about user input, each naming the file and the field at fault."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


class InputError(Exception):
    """Bad input: rendered as one line naming file and field; the CLI exits with code 2."""

    def __init__(self, message: str, *, file: str | Path | None = None, field: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.field = field

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.field) if part)
        return f"{where}: {self.message}" if where else self.message


def dotted(loc: Iterable[Any]) -> str:
    """Turn a pydantic error location into `a.b[2].c`."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def from_validation(exc: Any, file: str | Path | None, prefix: str = "") -> InputError:
    """Convert a pydantic ValidationError into an InputError about its first problem."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = [p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    field = dotted([*([prefix] if prefix else []), *loc])
    msg = first["msg"]
    if first["type"] == "extra_forbidden":
        msg = "unknown key (not part of the schema; see `campaign-planner schema`)"
    elif first["type"] == "missing":
        msg = "required but missing"
    elif "input" in first and first["type"].endswith(("_type", "literal_error", "parsing")):
        msg = f"{msg} (got {first['input']!r})"
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    # Model-level validators name the field they judge by starting the message with "@name: ".
    if msg.startswith("@") and ": " in msg:
        sub, msg = msg[1:].split(": ", 1)
        field = f"{field}.{sub}" if field else sub
    if len(errors) > 1:
        msg += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return InputError(msg, file=file, field=field)

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


PLAIN: dict[str, str] = {
    "greater_than_equal": "must be at least {ge}",
    "greater_than": "must be more than {gt}",
    "less_than_equal": "must be at most {le}",
    "less_than": "must be less than {lt}",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "int_from_float": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "string_type": "must be text",
    "list_type": "must be a list",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "string_too_short": "must not be empty",
    "too_short": "must list at least {min_length}",
    "too_long": "may list at most {max_length}",
    "string_too_long": "must be at most {max_length} characters",
}
"""Pydantic's error types in plain words (their own messages read "Input should be …")."""


PATTERNS: dict[str, str] = {
    r"^[A-Za-z0-9][A-Za-z0-9._-]*$": "may hold only letters, digits, `.`, `_` and `-`, and "
                                     "must start with a letter or digit",
    r"^[A-Za-z0-9][A-Za-z0-9._=-]*$": "may hold only letters, digits, `.`, `_`, `-` and `=`, "
                                      "and must start with a letter or digit",
    r"^[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*$": "must name a function as "
                                                          "module:function",
    r"^\d{1,4}\.\d{1,4}$": "must be a version like 12.6",
    r"^\d{1,4}\.\d{1,4}(\.\d{1,4})?$": "must be a version like 2.7 or 2.7.1",
    r"^([A-Za-z0-9][A-Za-z0-9-]{0,63})?$": "may hold only letters, digits and `-` (at most "
                                          "64), and must start with a letter or digit",
}
"""The schema's patterns, in words."""


def _number(x: Any) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def plain(error: dict[str, Any]) -> str:
    """One pydantic error's message in plain words; its own message where none is known."""
    if error["type"] == "string_pattern_mismatch":
        pattern = str((error.get("ctx") or {}).get("pattern", ""))
        return PATTERNS.get(pattern, "does not have the expected form")
    template = PLAIN.get(error["type"])
    if template is None:
        msg = str(error["msg"])
        return "must be " + msg.removeprefix("Input should be ") if msg.startswith(
            "Input should be ") else msg
    ctx = {k: _number(v) for k, v in (error.get("ctx") or {}).items()}
    try:
        return template.format(**ctx)
    except KeyError:
        return str(error["msg"])


def from_validation(exc: Any, file: str | Path | None, prefix: str = "") -> InputError:
    """Convert a pydantic ValidationError into an InputError about its first problem."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    loc = [p for p in first["loc"] if not (isinstance(p, str) and p.startswith("function-"))]
    field = dotted([*([prefix] if prefix else []), *loc])
    msg = plain(first)
    if first["type"] == "extra_forbidden":
        msg = "unknown key (not part of the schema; see `campaign-planner schema`)"
    elif first["type"] == "missing":
        msg = "required but missing"
    elif "input" in first and first["type"].endswith(("_type", "literal_error", "parsing",
                                                      "_fraction")):
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

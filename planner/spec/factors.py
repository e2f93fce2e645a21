"""Factors: the names and values a configuration is made of (`lr = 3e-4`), and when two
values are the same level."""

import math
import re

FactorValue = str | int | float | bool
"""A factor's value: text, a whole number, a number or a flag."""
FACTOR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")
"""A factor name: identifier-like (dots and dashes allowed after the first character), at
most 64 characters; it becomes `name=value` in {overrides}."""
MAX_VALUE_CHARS = 1024
"""Longest text value of a factor."""


def check_factors(v: dict[str, FactorValue]) -> dict[str, FactorValue]:
    """Factor names identifier-like; values finite numbers or bounded text."""
    for name, value in v.items():
        if not FACTOR_NAME.fullmatch(name):
            raise ValueError(f"factor name {name[:80]!r} is not identifier-like: letters, "
                             "digits, `_`, `.` and `-`, starting with a letter or `_`, at "
                             "most 64 characters")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"factor {name}: {value} is not a finite number")
        if isinstance(value, str) and (len(value) > MAX_VALUE_CHARS
                                       or any(c in value for c in "\0\n\r")):
            raise ValueError(f"factor {name}: text values are at most {MAX_VALUE_CHARS} "
                             "characters, without NUL or line breaks")
    return v


def same_value(a: object, b: object) -> bool:
    """Whether two factor values are the same level: TOML gives 1 and 1.0 different types,
    and `True == 1` must not count as the same value."""
    return (type(a) is type(b) and a == b) or (
        isinstance(a, int | float) and isinstance(b, int | float)
        and not isinstance(a, bool) and not isinstance(b, bool) and a == b
    )

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


def another_type(a: object, b: object) -> bool:
    """Whether `a` and `b` are one value spelled in two types: text beside the number or
    flag it reads as (`"0.1"` beside 0.1, `"1e-4"` beside 0.0001, `"true"` beside true).
    Filled into a command, both may give the same argument, so they are the same level."""
    if not (isinstance(a, str) ^ isinstance(b, str)):
        return False
    text, other = (a, b) if isinstance(a, str) else (b, a)
    word = str(text).strip()
    if isinstance(other, bool):
        return word.lower() == ("true" if other else "false")
    try:
        return float(word) == other
    except (ValueError, OverflowError):
        return False


def alike(a: object, b: object) -> bool:
    """Whether two factor values are the same level, in the same type or in another."""
    return same_value(a, b) or another_type(a, b)


def kind(v: object) -> str:
    """A value's type in words, for messages."""
    return "text" if isinstance(v, str) else "a flag" if isinstance(v, bool) else "a number"


def disguised_configs(base: dict[str, FactorValue],
                      variants: list[tuple[str, dict[str, FactorValue]]]) -> str | None:
    """`@variants[i].changes: …` for the first variant whose change is the baseline's
    value in another type, or whose changes are another variant's (in any type); None."""
    for i, (name, changes) in enumerate(variants):
        for factor, value in changes.items():
            if factor in base and another_type(base[factor], value):
                return (f"@variants[{i}].changes: variant {name!r} sets {factor} = "
                        f"{value!r} ({kind(value)}), which is the baseline's {factor} = "
                        f"{base[factor]!r} ({kind(base[factor])}): the baseline's own run "
                        "again; write the value the variant means")
        for j, (other, theirs) in enumerate(variants[:i]):
            if changes and changes.keys() == theirs.keys() and all(
                    alike(v, theirs[k]) for k, v in changes.items()):
                shown = ", ".join(f"{k} = {v!r}" for k, v in changes.items())
                mine = ", ".join(f"{k} = {v!r}" for k, v in theirs.items())
                return (f"@variants[{i}].changes: variant {name!r} ({shown}) is variant "
                        f"{other!r} ({mine}) again (variants[{j}]): the same run twice "
                        "under two names")
    return None

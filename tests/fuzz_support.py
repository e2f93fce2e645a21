"""Helpers of the fuzz suite: mutating nested TOML data, and calling the CLI in-process with
the promise every input must keep: exit 0 or 2 (1 where a command may report "not done"),
never a traceback, and on exit 2 one line on stderr."""

from __future__ import annotations

import contextlib
import io
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from planner.cli.main import main

# Deterministic in CI (no flake from a newly found example); FUZZ_RANDOM=1 explores,
# FUZZ_EXAMPLES=N sets the examples per test (100: about 600 in all, well under a minute).
FUZZ = settings(deadline=None, derandomize=not os.environ.get("FUZZ_RANDOM"),
                max_examples=int(os.environ.get("FUZZ_EXAMPLES", "100")),
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.filter_too_much], database=None)

NASTY_TEXT = ["", " ", "..", "../../outside", "/abs/path", "{seed[0]}", "{seed:zz}",
              "{seed!z}", "$(touch marker)", "it's a b", "x" * 300, "1" * 5000, "0-200000000",
              "a\nb", "\u00e9\u4e2d\U0001f600", "-1", "1e308", "nan", "%x", '"', "\\"]
NASTY_NUMBERS = [0, -1, 1, 2**63, -(2**63) - 1, 10**30, 1e308, -1e308, float("inf"),
                 float("-inf"), float("nan"), 1e-320, 0.5, 3e10]

values = st.deferred(lambda: st.one_of(
    st.sampled_from(NASTY_TEXT), st.sampled_from(NASTY_NUMBERS), st.booleans(),
    st.integers(), st.floats(), st.text(max_size=20),
    st.lists(st.one_of(st.integers(-3, 3), st.text(max_size=4)), max_size=3),
    st.dictionaries(st.text(min_size=1, max_size=6), st.integers(-3, 3), max_size=2)))


def paths(data: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside nested dicts and lists."""
    out = [prefix] if prefix else []
    if isinstance(data, dict):
        for k, v in data.items():
            out += paths(v, (*prefix, k))
    elif isinstance(data, list):
        for i, v in enumerate(data):
            out += paths(v, (*prefix, i))
    return out


def _parent(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path[:-1]:
        data = data[key]
    return data


@st.composite
def mutated(draw: st.DrawFn, data: Any, max_mutations: int = 3) -> Any:
    """`data` with a few values replaced, removed, or keys added."""
    import copy

    data = copy.deepcopy(data)
    for _ in range(draw(st.integers(1, max_mutations))):
        where = paths(data)
        if not where:
            break
        path = draw(st.sampled_from(where))
        parent = _parent(data, path)
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add"]))
        if action == "replace":
            parent[path[-1]] = draw(values)
        elif action == "delete":
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[draw(st.sampled_from(["extra", "id", "name", "value", "x$(y)"]))] = \
                draw(values)
        else:
            parent.append(draw(values))
    return data


def cli(argv: Sequence[str], allowed: tuple[int, ...] = (0, 2)) -> tuple[int, str, str]:
    """Run the CLI in-process; assert the promise; return (code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(list(argv))
        except SystemExit as exc:  # --help, --version
            rc = exc.code if isinstance(exc.code, int) else 0
    text = err.getvalue()
    assert rc in allowed, (rc, argv, text[-2000:])
    assert "Traceback" not in text, text
    if rc == 2:
        assert text.count("\n") == 1 and text.startswith("campaign-planner"), text
    return rc, out.getvalue(), text


def tree(folder: Path) -> set[str]:
    """Every path under `folder` (to tell whether anything was written)."""
    return {str(p) for p in folder.rglob("*")}

"""plan.toml's header with its long arrays of integers read apart gives what the TOML
parser gives for the whole header, or the parser's error: never another value."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.planning import plan_head

HEADER = tomli_w.dumps({
    "campaign": {"id": "c", "note": "seeds: [\n    1,\n]"},
    "summary": {"table": [{"variant": f"v{i}", "complete_seeds": list(range(-3, 97 + i))}
                          for i in range(3)] + [{"variant": "few", "complete_seeds": [1, 2]}]},
    "other": {"nested": [{"seeds": list(range(70)), "name": "x"}], "flags": [True] * 70},
})


def _toml(text: str) -> Any:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return "refused"


def _head(text: str) -> Any:
    try:
        return plan_head.loads(text)
    except ValueError:  # the TOML parser's error
        return "refused"


def test_a_written_header_is_read_as_the_toml_parser_reads_it() -> None:
    assert HEADER.count("    0,\n") == 4  # the arrays are written one integer a line
    given: list[str] = []
    parser = plan_head.toml_loads
    with pytest.MonkeyPatch.context() as m:
        m.setattr(plan_head, "toml_loads", lambda t: given.append(t) or parser(t))
        read = plan_head.loads(HEADER)
    assert read == tomllib.loads(HEADER)
    assert read["summary"]["table"][0]["complete_seeds"] == list(range(-3, 97))
    # The long arrays were read apart: the parser met none of their lines.
    assert len(given) == 1 and "    0,\n" not in given[0] and "    1,\n    2,\n" in given[0]


@pytest.mark.parametrize("edit", [
    # A string that could hold the mark, or the array's lines as its text.
    ('note = "', 'note = "\\u0001'), ('note = "', 'note = "\\U00000001'),
    ('id = "c"', "id = '''\nk = [\n" + "    1,\n" * 70 + "]\n'''"),
    ('id = "c"', 'id = """\nk = [\n' + "    1,\n" * 70 + ']\n"""'),
    # Integers the two grammars spell otherwise, or beyond TOML's 64 bits.
    ("    5,\n", "    05,\n"), ("    5,\n", "    +5,\n"), ("    5,\n", "    5_0,\n"),
    ("    5,\n", "    99999999999999999999,\n"), ("    5,\n", "    9223372036854775807,\n"),
    # A comment, a line led otherwise, a key given twice, a bracket not closing the array.
    ("    5,\n", "    5, # five\n"), ("    5,\n", "  5,\n"), ("    5,\n", "    5\n"),
    ('variant = "v0"', 'complete_seeds = 1\nvariant = "v0"'), ("\n]\n", "\n] x\n"),
    ("    5,\n", "    5,\n]\nk = [\n"),
])
def test_text_where_the_readings_could_differ_reads_as_the_toml_parser_reads_it(
        edit: tuple[str, str]) -> None:
    old, new = edit
    assert old in HEADER
    text = HEADER.replace(old, new, 1)
    assert _head(text) == _toml(text)


PIECES = ["\n", "    ", " ", ",", "[", "]", "#", '"', "'", '"""', "'''", "\\u0001", "=",
          "0", "-", "+", "_", "9" * 20, "x", "\x01", "\\", "k = [\n", "    1,\n" * 65]


@settings(max_examples=500, deadline=None)
@given(st.data())
def test_an_edited_header_reads_as_the_toml_parser_reads_it(data: st.DataObject) -> None:
    text = HEADER
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(0, len(text)))
        cut = data.draw(st.integers(0, 3))
        text = text[:at] + data.draw(st.sampled_from(PIECES)) + text[at + cut:]
    assert _head(text) == _toml(text)

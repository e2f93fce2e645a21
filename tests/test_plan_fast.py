"""plan.toml's run tables read as JSON give what the TOML parser gives, or nothing: any
text the two grammars could read differently goes to the TOML parser, and a plan read
either way is the same plan, or refused with the same line."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.errors import InputError
from planner.planfile import export
from planner.planfile.rules import value_problem
from planner.planning import plan_fast
from tests.run_fixtures import harness as h


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("p")
    data = h.preset(seeds=(0, 1), max_retries=0)
    return h.make_plan(folder, data).read_text()


def _toml(text: str) -> dict[str, Any] | None:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return None


def test_a_written_plan_is_read_as_the_toml_parser_reads_it(text: str) -> None:
    fast = plan_fast.parse(text)
    assert fast is not None, "plan.toml as written is read the fast way"
    assert fast == tomllib.loads(text)
    assert fast["runs"] and all("command" not in run for run in fast["runs"])


def _with_held(text: str) -> str:
    runs = text[text.index("\n\n[[runs]]\n"):]
    held = runs.replace("[[runs]]", "[[held]]").replace('id = "', 'id = "h-')
    return text + held[1:]  # as plan_toml writes held runs, after the runs


def test_held_runs_are_read_too(text: str) -> None:
    both = _with_held(text)
    fast = plan_fast.parse(both)
    assert fast is not None and fast == tomllib.loads(both) and fast["held"]


def _first_line(text: str, key: str) -> str:
    start = text.index("\n\n[[runs]]\n")
    at = text.index(f"\n{key} = ", start) + 1
    return text[at:text.index("\n", at)]


# Each is text the TOML parser reads otherwise than JSON would (or refuses): never read
# the fast way.
ODD = {
    "dotted key": lambda t: t.replace("\nsteps = ", "\nx.steps = ", 1),
    "comment line": lambda t: t.replace("\nsteps = ", "\n# a = 1\nsteps = ", 1),
    "comment after a value": lambda t: t.replace("\nsteps = 30", "\nsteps = 30 # x", 1),
    "key led by a space": lambda t: t.replace("\nsteps = ", "\n steps = ", 1),
    "quoted key": lambda t: t.replace("\nsteps = ", '\n"steps" = ', 1),
    "two keys on a line": lambda t: t.replace("\nsteps = 30", '\nsteps": 30, "x = 1', 1),
    "key given twice": lambda t: t.replace("\nsteps = 30", "\nsteps = 30\nsteps = 31", 1),
    "inline table": lambda t: t.replace("\nsteps = 30", "\nsteps = { a = 1 }", 1),
    "array over lines": lambda t: t.replace("\ncard = [0]", "\ncard = [\n0]", 1),
    "trailing comma": lambda t: t.replace("\ncard = [0]", "\ncard = [0,]", 1),
    "JSON's slash escape": lambda t: t.replace('\nkind = "train"', '\nkind = "tr\\/ain"', 1),
    "surrogate escape": lambda t: t.replace('\nkind = "train"', '\nkind = "\\ud800"', 1),
    "long escape": lambda t: t.replace('\nkind = "train"', '\nkind = "\\U00000041"', 1),
    "NaN": lambda t: t.replace("\nstart_h = ", "\nstart_h = NaN\nx = ", 1),
    "nan": lambda t: t.replace("\nstart_h = ", "\nstart_h = nan\nx = ", 1),
    "null": lambda t: t.replace("\nsteps = 30", "\nsteps = null", 1),
    "hex integer": lambda t: t.replace("\nsteps = 30", "\nsteps = 0x1e", 1),
    "underscored integer": lambda t: t.replace("\nsteps = 30", "\nsteps = 3_0", 1),
    "plus sign": lambda t: t.replace("\nsteps = 30", "\nsteps = +30", 1),
    "literal string": lambda t: t.replace('\nkind = "train"', "\nkind = 'train'", 1),
    "multi-line string": lambda t: t.replace('\nkind = "train"', '\nkind = """train"""', 1),
    "date": lambda t: t.replace("\nsteps = 30", "\nsteps = 1979-05-27", 1),
    "DEL in a string": lambda t: t.replace('\nkind = "train"', '\nkind = "tr\x7fain"', 1),
    "tab in a string": lambda t: t.replace('\nkind = "train"', '\nkind = "tr\tain"', 1),
    "CRLF": lambda t: t.replace("\n", "\r\n"),
    "blank line in a table": lambda t: t.replace("\nsteps = 30", "\n\nsteps = 30", 1),
    "table header": lambda t: t.replace("\nsteps = 30", "\n[runs.x]\nsteps = 30", 1),
    "header without a blank line": lambda t: t.replace("\n\n[[runs]]\n", "\n[[runs]]\n", 2)
    .replace("\n[[runs]]\n", "\n\n[[runs]]\n", 1),
    "runs in the header too": lambda t: t.replace("[campaign]", "runs = []\n\n[campaign]", 1),
    "text after the last run": lambda t: t + "\n[extra]\na = 1\n",
    "no final line break": lambda t: t[:-1],
}


@pytest.mark.parametrize("name", sorted(ODD))
def test_text_the_grammars_read_otherwise_goes_to_the_toml_parser(text: str,
                                                                  name: str) -> None:
    edited = ODD[name](text)
    assert edited != text
    assert plan_fast.parse(edited) is None


def _with_colon(text: str) -> str:
    """The plan with a colon in a value of its last run (a `host:port` in a vector): its
    tables are then read as lists of pairs, each counted."""
    at = text.rindex("\nargv = [") + len("\nargv = [")
    return text[:at] + '"localhost:29500", ' + text[at:]


@pytest.mark.parametrize("colon", [False, True], ids=["no colon", "a colon"])
def test_tables_with_a_colon_or_without_are_read_as_the_toml_parser_reads_them(
        text: str, colon: bool) -> None:
    base = _with_colon(text) if colon else text
    reading = plan_fast.read(base, columns=True)
    assert reading is not None and not reading.data.get("runs")
    assert plan_fast.rows(reading.columns["runs"]) == tomllib.loads(base)["runs"]
    assert plan_fast.parse(base) == tomllib.loads(base)


@pytest.mark.parametrize("colon", [False, True], ids=["no colon", "a colon"])
@pytest.mark.parametrize("name", sorted(ODD))
def test_text_the_grammars_read_otherwise_is_never_read_as_columns(
        text: str, name: str, colon: bool) -> None:
    edited = ODD[name](_with_colon(text) if colon else text)
    assert plan_fast.read(edited, columns=True) is None


@pytest.mark.parametrize("second", [
    # One table: a key given twice, and a line that gives two (as many pairs as lines).
    'steps = 1, "x": 2', 'steps = 1, "x" : 2', 'steps = 1,"x":2'])
def test_a_key_given_twice_beside_a_line_of_two_keys_is_not_read_as_json(
        text: str, second: str) -> None:
    start = text.index("\n\n[[runs]]\n")
    line = _first_line(text, "steps")
    at = text.index(line, start)
    edited = text[:at] + f"{second}\nsteps = 3" + text[at + len(line):]
    assert _toml(edited) is None
    for columns in (False, True):
        assert plan_fast.read(edited, columns=columns) is None


# What an edit may bring into the run tables: pieces of either grammar.
PIECES = ["\n", " = ", '"', "\\", "\\/", "\\u00e9", "\\ud83d", "\\n", "\\t", "\t", "\r",
          "\x7f", "\x00", ".", "#", "[", "]", "{", "}", ",", ":", "'", "NaN", "nan", "inf",
          "Infinity", "null", "true", "True", "1e5", "1E400", "-0", "0x1", "+1", "1_0",
          "01", "1.", ".5", '"""', "\n\n[[runs]]\n", "\n\n[[held]]\n", "é", "\U0001f600",
          " ", "x", "9" * 25, "steps", "id", "9e5", "-1e5", "1e-5", "d9e5", "0" * 16,
          ',"id": "x"', '1},{"id": 2', '"{}"']


def _mutated(text: str, data: st.DataObject) -> str:
    if data.draw(st.booleans()):
        text = _with_held(text)
    start = text.index("\n\n[[runs]]\n")
    for _ in range(data.draw(st.integers(1, 3))):
        at = data.draw(st.integers(start - 40, len(text)))
        cut = data.draw(st.integers(0, 3))
        piece = data.draw(st.sampled_from(PIECES))
        text = text[:at] + piece + text[at + cut:]
    return text


@settings(max_examples=600, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_edited_plan_is_read_as_the_toml_parser_reads_it_or_left_to_it(
        text: str, data: st.DataObject) -> None:
    edited = _mutated(text, data)
    reading = plan_fast.read(edited)
    if reading is not None:
        assert reading.data == _toml(edited)
        for name in reading.plain:  # nothing there for the value checks to find
            assert value_problem({name: reading.data[name]}) is None
    grouped = plan_fast.read(edited, columns=True)
    assert (grouped is None) == (reading is None)
    if grouped is not None:
        assert {**grouped.data, **{name: plan_fast.rows(groups) for name, groups
                                   in grouped.columns.items()}} == _toml(edited)


def _outcome(path: Path, monkeypatch: pytest.MonkeyPatch, fast: bool) -> Any:
    with monkeypatch.context() as m:
        m.setenv("CAMPAIGN_PLANNER_CACHE", "off")
        if not fast:  # the whole file read by the TOML parser
            m.setattr(plan_fast, "read", lambda _text, columns=False: None)
        try:
            return export.read_plan(path)
        except InputError as exc:
            return str(exc)


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_edited_plan_reads_as_the_same_plan_or_the_same_error_either_way(
        text: str, data: st.DataObject, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    edited = _mutated(text, data)
    path = tmp_path / "plan.toml"
    path.write_bytes(edited.encode("utf-8", "surrogatepass"))
    assert _outcome(path, monkeypatch, True) == _outcome(path, monkeypatch, False)


def test_values_the_checks_refuse_are_named_as_the_toml_reading_names_them(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "plan.toml"
    line = _first_line(text, "steps")
    for bad in ("steps = -1", "steps = 1e400", 'steps = "x"', "steps = 99999999999999999999"):
        path.write_text(text.replace(line, bad, 1))
        assert plan_fast.parse(path.read_text()) is not None, bad
        fast, slow = _outcome(path, monkeypatch, True), _outcome(path, monkeypatch, False)
        assert isinstance(fast, str) and fast == slow, bad
        assert "runs[0].steps" in fast, fast


@pytest.mark.parametrize(("lines", "field", "said"), [
    # A command given beside the vector is compared with it, whatever the other runs say.
    ("{argv}\ncommand = \"sh -c 'touch MARKER'\"", "runs[0].command", "does not match argv"),
    # A shell flag that is not a boolean as written: no command is derived from it, and
    # the flag is refused as a preset's would be (nothing is coerced).
    ('argv = ["/bin/sh", "-c", "echo hi"]\nshell = "yes"', "runs[0].shell",
     "must be true or false"),
])
def test_a_command_not_derived_here_is_still_compared_with_its_vector(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lines: str,
        field: str, said: str) -> None:
    first = _first_line(text, "argv")
    path = tmp_path / "plan.toml"
    path.write_text(text.replace(first, lines.replace("{argv}", first), 1))
    assert plan_fast.parse(path.read_text()) is not None
    fast, slow = _outcome(path, monkeypatch, True), _outcome(path, monkeypatch, False)
    assert isinstance(fast, str) and fast == slow
    assert f"{field}: {said}" in fast, fast


def test_run_tables_without_an_escape_or_a_long_number_are_known_plain(text: str) -> None:
    reading = plan_fast.read(text)
    assert reading is not None and reading.plain == {"runs"}
    steps = _first_line(text, "steps")
    for edit, plain, problem in [
            ("steps = 10000000000000000", False, "a number far beyond any plan's"),
            ("steps = 1000000000000000", False, None),  # 1e15: the bound itself
            ("steps = 1e15", False, None), ("steps = 1e400", False, "not a finite number"),
            ('steps = "a\\tb"', False, "control character"),
            ("steps = 999999999999999", True, None)]:
        reading = plan_fast.read(text.replace(steps, edit, 1))
        assert reading is not None and reading.plain == ({"runs"} if plain else set()), edit
        found = value_problem(reading.data)
        assert (found is None) if problem is None else (found is not None
                                                        and problem in found[1]), (edit, found)


@pytest.mark.parametrize("edit", [
    # A line of two pairs, one a key of the table given again: as many pairs as lines.
    'steps = 1,"id": "x"',
    # A second table begun inside a value, with no brace of its own before it.
    'steps = 1},{"steps": 2',
])
def test_a_line_of_two_pairs_is_not_read_as_json(text: str, edit: str) -> None:
    edited = text.replace(_first_line(text, "steps"), edit, 1)
    assert plan_fast.read(edited) is None


@pytest.mark.parametrize(("value", "long"), [
    ('"d9e5"', False), ('"v1e5"', False), ("1e-5", False), ("123456789012345", False),
    ("9e5", True), ("-1e5", True), ("[1, 2E+3]", True), ("1.5e20", True),
    ("1234567890123456", True), ('"0123456789012345"', True)])  # text: a false alarm
def test_numbers_that_may_be_long_are_found_in_the_text(value: str, long: bool) -> None:
    assert plan_fast._long_number(f"steps = {value}") is long


def test_braces_and_nulls_in_text_are_read_as_the_toml_parser_reads_them(text: str) -> None:
    argv = _first_line(text, "argv")
    edited = text.replace(argv, argv[:-1] + r', "--config={\"a\": null}", "{}"]', 1)
    reading = plan_fast.read(edited)
    assert reading is not None and reading.data == _toml(edited)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=False, allow_infinity=False), st.integers(),
                          st.text(max_size=8)), max_size=20))
def test_the_compiled_json_reading_gives_the_standard_librarys_values(
        values: list[Any]) -> None:
    import json
    import struct

    text = json.dumps([{"v": v} for v in values])
    got, want = plan_fast._dicts(text), json.loads(text)
    assert got == want
    for a, b in zip(got, want, strict=True):  # floats to the bit, -0.0 included
        assert type(a["v"]) is type(b["v"])
        if isinstance(b["v"], float):
            assert struct.pack("d", a["v"]) == struct.pack("d", b["v"])


@pytest.mark.parametrize("constant", ["NaN", "Infinity", "-Infinity"])
def test_the_compiled_json_reading_refuses_what_toml_spells_otherwise(constant: str) -> None:
    with pytest.raises(ValueError):
        plan_fast._dicts(f'[{{"v": {constant}}}]')


def test_a_plan_read_from_its_bytes_is_read_as_from_its_text(text: str, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    named = text.replace('name = "', 'name = "é…', 1)  # the header beyond one byte a char
    for columns in (False, True):
        from_bytes = plan_fast.read(named.encode(), columns=columns)
        assert from_bytes is not None and from_bytes == plan_fast.read(named, columns=columns)
    raw = named.encode()
    split = raw.index(b"\n\n[[runs]]\n")
    path = tmp_path / "plan.toml"
    for at in (split // 2, split + (len(raw) - split) // 2):  # the header, then the runs
        bad = raw[:at] + b"\xff" + raw[at:]
        assert plan_fast.read(bad, columns=True) is None
        path.write_bytes(bad)
        assert _outcome(path, monkeypatch, True) == _outcome(path, monkeypatch, False)
        assert "not UTF-8 text" in _outcome(path, monkeypatch, True)

"""A plan's runs checked a column at a time (`plan_bulk`) give the plan that checking them
table by table gives, or leave it to that reading: never a plan the tables would refuse,
never another error."""

from __future__ import annotations

import contextlib
import io
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.cli.main import main as planner_main
from planner.errors import InputError
from planner.planfile import export
from planner.planfile import seal as plan_seal
from planner.planning import plan_bulk, plan_fast
from planner.spec.loading import shipped_presets
from planner.spec.shipped import shipped
from tests.run_fixtures import harness as h


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = tmp_path_factory.mktemp("p")
    data = h.preset(seeds=(0, 1, 2), max_retries=1)
    # Its run tables are edited here as their author would: the seal goes (`plan_seal`).
    return plan_seal.unsealed(h.make_plan(folder, data).read_text())


def _outcome(path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> Any:
    """The plan (as its JSON, so 1 and 1.0 differ) or the error, read `how`: `bulk` (as
    `read_plan` does), `tables` (the JSON reading, table by table), `toml` (the TOML
    parser)."""
    with monkeypatch.context() as m:
        m.setenv("CAMPAIGN_PLANNER_CACHE", "off")
        if how == "tables":
            m.setattr(plan_bulk, "plan", lambda *_a, **_k: None)
        elif how == "toml":
            m.setattr(plan_fast, "read", lambda _text, columns=False: None)
        try:
            plan = export.read_plan(path)
        except InputError as exc:
            return str(exc)
        return plan.model_dump_json(), [type(v) for r in plan.runs for v in r.__dict__.values()]


def _same_every_way(path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    bulk = _outcome(path, monkeypatch, "bulk")
    assert bulk == _outcome(path, monkeypatch, "tables") == _outcome(path, monkeypatch, "toml")
    return bulk


def test_a_written_plan_is_read_a_column_at_a_time(text: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    reading = plan_fast.read(text, columns=True)
    assert reading is not None and set(reading.columns) == {"runs"}
    assert export._bulk(reading) is not None  # not left to the tables
    assert not isinstance(_same_every_way(path, monkeypatch), str)


def _line(text: str, key: str, nth: int = 0) -> tuple[int, int]:
    at = text.index("\n\n[[runs]]\n")
    for _ in range(nth + 1):
        at = text.index(f"\n{key} = ", at + 1)
    return at + 1, text.index("\n", at + 1)


# One run's field given another value: each is a rule of the schema, a validator, the
# run's own checks or the plan's.
EDITS = [
    ("steps", "-1"), ("steps", "1.0"), ("steps", '"30"'), ("steps", "true"),
    ("steps", "1000000000000000"), ("steps", "10000000000000000"), ("steps", "[30]"),
    ("start_h", "1"), ("start_h", "-0.5"), ("start_h", "1e400"), ("start_h", "99999.0"),
    ("end_h", "0.0"), ("seed", "9223372036854775807"), ("seed", "9223372036854775808"),
    ("seed", "-9223372036854775808"), ("seed", "1.5"),
    ("id", '"a b"'), ("id", '".x"'), ("id", '""'), ("id", '"' + "x" * 201 + '"'),
    ("id", '"exec-test-x=1"'), ("id", '"é"'), ("id", "1"),
    ("kind", '"nope"'), ("kind", '"robustness"'), ("variant", '".v"'), ("variant", '"a b"'),
    ("factor", '"1x"'), ("factor", '"a+b"'), ("value", "1.5"), ("value", "true"),
    ("value", '"' + "x" * 1_025_001 + '"'), ("value", '"' + "x" * 1_025_000 + '"'),
    ("value", "[1]"), ("value", "-0.0"), ("value", "7"), ("value", "1e308"),
    ("card", "[]"), ("card", "[4096]"), ("card", "[1, 2]"), ("card", "[true]"),
    ("card", "[-1]"), ("card", "[99]"),
    ("checkpoint_dir", '"../x"'), ("checkpoint_dir", '"/abs/ck"'), ("checkpoint_dir", '""'),
    ("checkpoint_dir", '"  "'), ("checkpoint_dir", '"a\\nb"'), ("checkpoint_dir", '"a/./b"'),
    ("checkpoint_dir", '"' + "d/" * 300 + '"'), ("export_name", '"x/../y"'),
    ("resume", '"r\\u0000"'), ("resume", '"é/ü"'),
    ("argv", "[]"), ("argv", '[""]'), ("argv", '["", "x"]'), ("argv", '["a", 1]'),
    ("argv", '["a", "b\\nc"]'), ("argv", '["a", "b c", "$x"]'), ("argv", '["a\\tb"]'),
    ("argv", '["/bin/sh", "-c", "echo hi"]'), ("argv", '"python"'),
    ("max_retries", "1001"), ("max_retries", "-1"),
    ("effective_batch", "0"), ("micro_batch", "1e3"),
]


@pytest.mark.parametrize(("key", "value"), EDITS)
def test_an_edited_field_reads_the_same_every_way(text: str, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   key: str, value: str) -> None:
    for nth in (0, 4):  # the first run and one further on
        at, end = _line(text, key, nth)
        path = tmp_path / f"plan{nth}.toml"
        path.write_text(text[:at] + f"{key} = {value}" + text[end:])
        _same_every_way(path, monkeypatch)


@pytest.mark.parametrize("added", [
    'depends_on = "nowhere"', "shell = true", "shell = 1", 'depends_on = ""',
    'command = "other"', "version = 2", "shard = -1", 'unknown = "x"',
    "max_retries = 2", 'extra = ["x"]', "extra = [1e400]",
])
def test_a_field_added_to_one_run_reads_the_same_every_way(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, added: str) -> None:
    end = _line(text, "resume", 2)[1]
    path = tmp_path / "plan.toml"
    path.write_text(text[:end] + "\n" + added + text[end:])
    _same_every_way(path, monkeypatch)


def test_a_run_given_twice_or_on_a_card_not_rented_reads_the_same_every_way(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = (text[slice(*_line(text, "id", n))] for n in (0, 1))
    path = tmp_path / "plan.toml"
    path.write_text(text.replace(second, first, 1))
    assert "used twice" in _same_every_way(path, monkeypatch)
    path.write_text(text.replace("cards = ", "cards = 1\nx = ", 1))
    _same_every_way(path, monkeypatch)


def test_runs_of_several_shapes_are_read_as_groups_in_their_places(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Training runs and the evaluations of them (one key more: the run evaluated).
    reading = plan_fast.read(text, columns=True)
    assert reading is not None and len(reading.columns["runs"]) == 2
    assert plan_fast.rows(reading.columns["runs"]) == tomllib.loads(text)["runs"]
    # A table of the evaluations' length with other keys: a group of its own.
    end = _line(text, "resume", 0)[1]
    edited = text[:end] + "\nshell = false" + text[end:]
    reading = plan_fast.read(edited, columns=True)
    assert reading is not None and len(reading.columns["runs"]) == 3
    assert plan_fast.rows(reading.columns["runs"]) == tomllib.loads(edited)["runs"]
    path = tmp_path / "plan.toml"
    path.write_text(edited)
    assert not isinstance(_same_every_way(path, monkeypatch), str)


VALUES = st.sampled_from(["0", "1", "-1", "1.0", "0.5", "1e15", "1e16", '""', '"x"',
                          '"a b"', '"../x"', '"é"', "true", "[]", "[0]", '["x"]', '[""]',
                          '["a", "b"]', "[1.5]", '"\\n"', '"\\t"', "9223372036854775808"])


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fields_given_any_value_read_the_same_every_way(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        data: st.DataObject) -> None:
    keys = ["id", "kind", "variant", "factor", "value", "seed", "card", "start_h", "end_h",
            "steps", "micro_batch", "accumulation", "effective_batch", "checkpoint_dir",
            "export_name", "argv", "resume", "max_retries"]
    edited = text
    for _ in range(data.draw(st.integers(1, 3))):
        key = data.draw(st.sampled_from(keys))
        at, end = _line(edited, key, data.draw(st.integers(0, 5)))
        edited = edited[:at] + f"{key} = {data.draw(VALUES)}" + edited[end:]
    path = tmp_path / "plan.toml"
    path.write_text(edited)
    _same_every_way(path, monkeypatch)


def test_held_runs_are_read_a_column_at_a_time_too(text: str, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    runs = text[text.index("\n\n[[runs]]\n"):]
    held = runs.replace("[[runs]]", "[[held]]").replace('id = "', 'id = "h-')
    both = text + held[1:]
    reading = plan_fast.read(both, columns=True)
    assert reading is not None and set(reading.columns) == {"runs", "held"}
    assert export._bulk(reading) is not None
    path = tmp_path / "plan.toml"
    path.write_text(both)
    assert not isinstance(_same_every_way(path, monkeypatch), str)
    # A held run's id that a scheduled run has: refused alike.
    path.write_text(text + held[1:].replace('id = "h-', 'id = "', 1))
    assert "used twice" in _same_every_way(path, monkeypatch)


def test_a_shell_plan_is_read_a_column_at_a_time_too(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    data = h.preset(seeds=(0, 1), command="echo {run_id} > {checkpoint_dir}/out.txt",
                    shell=True)
    path = h.make_plan(tmp_path / "p", data)
    text = path.read_text()
    reading = plan_fast.read(text, columns=True)
    assert reading is not None and export._bulk(reading) is not None
    assert not isinstance(_same_every_way(path, monkeypatch), str)
    # A shell's vector that is not the shell and its script: refused alike.
    first = text[slice(*_line(text, "argv"))]
    path.write_text(text.replace(first, 'argv = ["/bin/sh", "-c", "echo", "x"]', 1))
    assert "runs[0]" in _same_every_way(path, monkeypatch)


def test_the_tables_read_after_columns_are_walked_only_where_needed(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Left to the tables (a key the columns do not know), the values are still checked.
    end = _line(text, "resume", 1)[1]
    path = tmp_path / "plan.toml"
    for added in ("x = 1", "x = 1e400", 'x = "a\\u0007"'):
        path.write_text(text[:end] + "\n" + added + text[end:])
        _same_every_way(path, monkeypatch)


@pytest.mark.parametrize("name", sorted(shipped_presets()))
def test_every_shipped_preset_s_plan_is_read_a_column_at_a_time(
        name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Factor values of every kind in one column (text, numbers, flags), embedding shards.
    with contextlib.redirect_stdout(io.StringIO()):
        assert planner_main(["--preset", str(shipped(f"{name}.toml")), "--out",
                             str(tmp_path), "--created", "2026-01-01T00:00:00"]) == 0
    path = tmp_path / "plan.toml"
    reading = plan_fast.read(path.read_text(), columns=True)
    assert reading is not None and export._bulk(reading) is not None
    assert not isinstance(_same_every_way(path, monkeypatch), str)


def test_the_column_forms_vouch_for_a_written_plan_and_for_nothing_they_cannot(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.planfile.rules import plan_runs_fine, values_fine

    path = tmp_path / "plan.toml"
    path.write_text(text)
    monkeypatch.setenv("CAMPAIGN_PLANNER_CACHE", "off")
    plan = export.read_plan(path)
    runs, cards = plan.runs, plan.campaign.cards
    assert values_fine([r.value for r in runs])
    assert plan_runs_fine(runs, [], cards)
    assert not values_fine(["x", float("inf")]) and not values_fine(["x" * 1_025_001])
    assert not values_fine([None]) and values_fine([1, True, -0.0, "x" * 1_025_000])
    again = runs[0].model_copy()
    assert not plan_runs_fine([*runs, again], [], cards)  # an id used twice
    assert not plan_runs_fine(runs, [], max(max(r.card) for r in runs))  # a card not rented
    stray = runs[0].model_copy(update={"id": "other", "depends_on": "nowhere"})
    assert not plan_runs_fine([*runs, stray], [], cards)
    assert not plan_runs_fine(runs, [runs[0].model_copy(update={"id": "h"})], cards)
    assert plan_runs_fine([], [], cards)

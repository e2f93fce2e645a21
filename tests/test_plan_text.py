"""A plan's runs are written compactly (a JSON line per run in runs.jsonl, no command, no
defaults) and read back into the same plan; a plan written the older way, its runs as
tables in plan.toml with each command and every default, still reads the same. The one-line
TOML values a run's manifest holds read back as written."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.planfile import text as plan_text
from planner.planfile.export import plan_texts, read_plan
from planner.tomlio import dumps
from tests.run_fixtures import harness as h


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("p")
    return h.make_plan(folder, h.preset(seeds=(0, 1), max_retries=0))


@settings(max_examples=300, deadline=None)
@given(value=st.one_of(st.text(), st.integers(-(2**63), 2**63 - 1),
                       st.floats(allow_nan=False), st.booleans(),
                       st.lists(st.one_of(st.text(), st.integers())),
                       st.dictionaries(st.text(), st.text(), max_size=3)))
def test_every_value_reads_back_as_written(value: Any) -> None:
    text = f"v = {plan_text.literal(value)}\n"
    assert text.count("\n") == 1
    assert tomllib.loads(text)["v"] == value


def test_runs_are_a_line_each_without_command_or_defaults(planned: Path) -> None:
    lines = (planned.parent / "runs.jsonl").read_text().splitlines()
    rows = [json.loads(x) for x in lines]
    plan = h.load(planned)
    assert len(rows) == len(plan.runs) and "[[runs]]" not in planned.read_text()
    assert not [r for r in rows if {"command", "shell", "max_retries"} & set(r)]
    assert not [r for r in rows if r.get("depends_on") == ""]
    assert rows[0]["argv"] == plan.runs[0].argv
    evaluation = next(r for r in rows if r["kind"] == "robustness")
    assert evaluation["depends_on"], "a field away from its default is written"


def test_the_plan_reads_back_as_planned_and_writes_the_same_bytes(planned: Path) -> None:
    plan = read_plan(planned)
    assert plan_texts(plan) == (planned.read_text(),
                                (planned.parent / "runs.jsonl").read_text())
    for run in plan.runs:
        assert run.command == (run.argv[2] if run.shell else " ".join(run.argv))


def test_a_plan_written_with_every_field_reads_the_same(planned: Path, tmp_path: Path) -> None:
    plan = read_plan(planned)
    old = tmp_path / "plan.toml"
    data = plan.model_dump(mode="json")
    old.write_text(dumps(data))
    assert "command = " in old.read_text()
    assert read_plan(old) == plan


SCALARS = st.one_of(st.text(max_size=6), st.integers(-(2**64), 2**64), st.floats(),
                    st.booleans(), st.sampled_from(["a\nb", "x\x00", "\x1b[2J", "ok"]))
KEYS = st.sampled_from(["id", "seed", "argv", "command", "card", "steps", "note", "seedx"])
TABLE = st.dictionaries(KEYS, st.one_of(SCALARS, st.lists(SCALARS, max_size=3),
                                        st.dictionaries(KEYS, SCALARS, max_size=2)),
                        max_size=5)


@settings(max_examples=400, deadline=None)
@given(data=st.dictionaries(st.sampled_from(["runs", "held", "not_fitting", "campaign"]),
                            st.one_of(st.lists(TABLE, max_size=3), TABLE), max_size=3))
def test_checking_a_table_at_once_finds_what_the_walk_finds(data: dict[str, Any]) -> None:
    """The quick check of each run's table never lets through what the value-by-value
    walk refuses, and names the same key."""
    from planner.planfile import rules as plan_rules

    walked = None
    for k, v in data.items():
        walked = plan_rules._walk(v, k)
        if walked:
            break
    assert plan_rules.value_problem(data) == walked


def test_a_held_runs_script_may_hold_line_breaks_as_a_runs_may() -> None:
    from planner.planfile.rules import value_problem

    script = {"argv": ["/bin/sh", "-c", "a\nb"], "command": "a\nb"}
    assert value_problem({"runs": [script], "held": [script]}) is None
    assert value_problem({"held": [{**script, "id": "a\nb"}]}) == (
        "held[0].id", "holds a control character (a line break, a tab or an escape)")


@settings(max_examples=300, deadline=None)
@given(text=st.text())
def test_strings_are_written_as_tomli_w_writes_them(text: str) -> None:
    assert f"v = {plan_text.string(text)}\n" == tomli_w.dumps({"v": text})


def test_a_manifest_is_what_tomli_w_writes_for_it(planned: Path) -> None:
    from planner.run.params import MANIFEST_HEADER, manifest_text, run_fingerprint, run_parameters

    for run in [*h.load(planned).runs]:
        for edited in (run, run.model_copy(update={"value": "tab\there \"q\" é\\"})):
            doc = {"run_id": edited.id, "fingerprint": run_fingerprint(edited),
                   "parameters": run_parameters(edited)}
            assert manifest_text(edited) == MANIFEST_HEADER + tomli_w.dumps(doc)

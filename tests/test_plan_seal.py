"""A plan is whole or refused: a runs file cut at any line, spliced from two plans' or
another plan's is one line and exit 2 for every command that reads a plan, even one read
whole just before. A plan.toml holding its run tables itself is checked against its seal
(`plan_seal`) as before."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest
import tomli_w

from planner.cli.main import main
from planner.errors import InputError
from planner.planfile import seal as plan_seal
from planner.planfile.export import plan_texts, read_plan
from planner.run import prepare
from tests.run_fixtures import harness as h

COMMANDS = ["run", "run --dry-run", "status", "status --json", "slurm", "report", "replan"]

Files = tuple[bytes, bytes]
"""A plan's plan.toml and runs.jsonl."""


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[Files, Files]:
    """Two plans' files: the same campaign, one with more seeds and longer runs."""
    tmp = tmp_path_factory.mktemp("plans")
    a = h.make_plan(tmp / "a", h.preset(seeds=(0, 1), cards=2))
    b = h.make_plan(tmp / "b", h.preset(seeds=(0, 1, 2), steps=40, cards=2))
    return ((a.read_bytes(), (a.parent / "runs.jsonl").read_bytes()),
            (b.read_bytes(), (b.parent / "runs.jsonl").read_bytes()))


def _damaged(plans: tuple[Files, Files]) -> dict[str, bytes]:
    """Runs files put beside the first plan's plan.toml."""
    a, b = plans[0][1].splitlines(keepends=True), plans[1][1].splitlines(keepends=True)
    cases = {f"cut-{n}": b"".join(a[:n]) for n in range(len(a))}
    cases["cut-in-a-line"] = b"".join(a)[:-20]
    for n in range(1, len(a)):
        cases[f"spliced-{n}"] = b"".join(a[:n] + b[n:len(a)])
    cases["another-plans"] = plans[1][1]
    return cases


def _cases() -> list[str]:
    return ([f"cut-{n}" for n in range(6)] + ["cut-in-a-line", "another-plans"]
            + [f"spliced-{n}" for n in range(1, 6)])


def _write(folder: Path, files: Files) -> Path:
    folder.mkdir(exist_ok=True)
    (folder / "plan.toml").write_bytes(files[0])
    (folder / "runs.jsonl").write_bytes(files[1])
    return folder / "plan.toml"


@pytest.mark.parametrize("case", _cases())
def test_a_cut_or_spliced_plan_is_refused_by_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files],
        case: str) -> None:
    plan_path = _write(tmp_path / "p", plans[0])
    read_plan(plan_path)  # the whole plan, read before
    (plan_path.parent / "runs.jsonl").write_bytes(_damaged(plans)[case])
    before = h.tree(plan_path.parent)
    for command in COMMANDS:
        name, *flags = command.split()
        out = {"slurm": ["--out", str(tmp_path / "o")], "report": ["--out",
               str(tmp_path / "o.html")], "replan": ["--out", str(tmp_path / "o")]}
        rc = main([name, str(plan_path), *flags, *out.get(name, [])])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (command, err)
        assert str(plan_path.parent / "runs.jsonl") in err, (command, err)
        assert "SHA-256 differs" in err, (command, err)
        assert not (tmp_path / "o").exists() and not (tmp_path / "o.html").exists()
    # The Progress screen reads the plan as `run` does.
    with pytest.raises(InputError):
        prepare.load_plan(str(plan_path))
    assert h.tree(plan_path.parent) == before


def test_the_whole_plan_reads_and_plan_toml_names_its_runs_file(
        tmp_path: Path, plans: tuple[Files, Files]) -> None:
    plan_path = _write(tmp_path, plans[0])
    plan = read_plan(plan_path)
    entry = tomllib.loads(plans[0][0].decode())["runs_file"]
    assert entry["name"] == "runs.jsonl" and (entry["runs"], entry["held"]) == (6, 0)
    assert len(plans[0][1].splitlines()) == len(plan.runs) == 6
    assert tuple(t.encode() for t in plan_texts(plan)) == plans[0]


def test_an_edit_of_the_runs_is_refused_until_its_author_unseals_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files]
        ) -> None:
    plan_path = _write(tmp_path, plans[0])
    runs = plan_path.parent / "runs.jsonl"
    runs.write_bytes(plans[0][1].replace(b'"steps":30', b'"steps":31', 1))
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert "SHA-256 differs" in err and "delete `sha256`" in err, err
    data = tomllib.loads(plan_path.read_text())
    del data["runs_file"]["sha256"]
    plan_path.write_text(tomli_w.dumps(data))
    assert read_plan(plan_path).runs[0].steps == 31


@pytest.mark.parametrize(("lines", "said"), [
    (1, "holds 5 lines, plan.toml counts 6 runs and 0 held"),
    (0, "runs[2]: line 3 is not a JSON object"),
])
def test_an_unsealed_runs_file_is_still_counted_and_parsed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files],
        lines: int, said: str) -> None:
    plan_path = _write(tmp_path, plans[0])
    data = tomllib.loads(plan_path.read_text())
    del data["runs_file"]["sha256"]
    plan_path.write_text(tomli_w.dumps(data))
    rows = plans[0][1].splitlines(keepends=True)
    rows = rows[lines:] if lines else [*rows[:2], b"{oops\n", *rows[3:]]
    (plan_path.parent / "runs.jsonl").write_bytes(b"".join(rows))
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1, err


@pytest.mark.parametrize(("entry", "field"), [
    ({"name": "../runs.jsonl"}, "runs_file.name"),
    ({"name": "/etc/passwd.jsonl"}, "runs_file.name"),
    ({"name": "missing.jsonl"}, "runs_file.name"),
    ({"runs": -1}, "runs_file.runs"),
    ({"held": True}, "runs_file.held"),
    ({"sha256": "abc"}, "runs_file.sha256"),
    ({"extra": 1}, "runs_file.extra"),
])
def test_a_bad_runs_file_entry_is_one_line_naming_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files],
        entry: dict[str, object], field: str) -> None:
    plan_path = _write(tmp_path, plans[0])
    data = tomllib.loads(plan_path.read_text())
    data["runs_file"].update(entry)
    plan_path.write_text(tomli_w.dumps(data))
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert f"{plan_path}: {field}" in err and err.count("\n") == 1, err


def test_a_runs_file_that_is_a_fifo_is_refused_without_waiting(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files]) -> None:
    import os

    plan_path = _write(tmp_path, plans[0])
    (plan_path.parent / "runs.jsonl").unlink()
    os.mkfifo(plan_path.parent / "runs.jsonl")
    assert main(["status", str(plan_path)]) == 2
    assert "not a regular file" in capsys.readouterr().err


def _single_file(files: Files, *, sealed: bool) -> str:
    """The plan as one plan.toml holding its run tables, as plans were written before
    runs had their own file; with its seal or without."""
    data = tomllib.loads(files[0].decode())
    del data["runs_file"]
    tables = "\n" + tomli_w.dumps({"runs": [json.loads(x) for x in files[1].splitlines()]})
    seal = plan_seal.line(6, 0, tables) if sealed else ""
    return "# a plan\n" + seal + "\n" + tomli_w.dumps(data) + tables


def test_a_single_file_plan_reads_and_its_seal_is_checked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files]) -> None:
    plan_path = tmp_path / "plan.toml"
    whole = _single_file(plans[0], sealed=True)
    plan_path.write_text(whole)
    assert len(read_plan(plan_path).runs) == 6
    cut = whole[:whole.rindex("\n[[runs]]\n") + 1]
    plan_path.write_text(cut)
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert "header states 6 runs and 0 kept aside, its tables hold 5 and 0" in err, err
    edited = whole.replace("steps = 30", "steps = 31", 1)
    plan_path.write_text(edited)
    assert main(["status", str(plan_path)]) == 2
    assert "SHA-256 differs" in capsys.readouterr().err
    plan_path.write_text(plan_seal.unsealed(edited))
    assert read_plan(plan_path).runs[0].steps == 31


def test_a_plan_toml_with_both_run_tables_and_a_runs_file_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[Files, Files]) -> None:
    plan_path = _write(tmp_path, plans[0])
    plan_path.write_text(plan_path.read_text() + "\n[[runs]]\nid = \"x\"\n")
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert f"{plan_path}: runs" in err and "one or the other" in err, err

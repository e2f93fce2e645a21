"""A plan is whole or refused: a plan.toml cut at any run table's boundary, or spliced from
two plans, is one line and exit 2 for every command that reads a plan, even one read whole
just before; the seal's own rules (`plan_seal`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.cli.main import main
from planner.errors import InputError
from planner.planfile import seal as plan_seal
from planner.planfile.export import plan_toml, read_plan
from planner.run import prepare
from tests.run_fixtures import harness as h

COMMANDS = ["run", "run --dry-run", "status", "status --json", "slurm", "report", "replan"]


def _boundaries(raw: bytes) -> list[int]:
    """Where each run table begins (after the line break before its header)."""
    return [i + 1 for i in range(len(raw)) if raw.startswith(b"\n[[runs]]\n", i)]


@pytest.fixture(scope="module")
def plans(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, bytes]:
    """Two plans' bytes: the same campaign, one with more seeds and longer runs."""
    tmp = tmp_path_factory.mktemp("plans")
    a = h.make_plan(tmp / "a", h.preset(seeds=(0, 1), cards=2))
    b = h.make_plan(tmp / "b", h.preset(seeds=(0, 1, 2), steps=40, cards=2))
    return a.read_bytes(), b.read_bytes()


def _damaged(plans: tuple[bytes, bytes]) -> dict[str, bytes]:
    a, b = plans
    cases = {f"cut-{n}": a[:at] for n, at in enumerate(_boundaries(a))}
    cases["cut-at-the-end"] = a[:a.rindex(b"\n[[runs]]\n") + 1] + b"\n"
    for n, (x, y) in enumerate(zip(_boundaries(a), _boundaries(b), strict=False)):
        cases[f"spliced-{n}"] = a[:x] + b[y:]
    return cases


def _cases() -> list[str]:
    return ([f"cut-{n}" for n in range(6)] + ["cut-at-the-end"]
            + [f"spliced-{n}" for n in range(6)])


@pytest.mark.parametrize("case", _cases())
def test_a_cut_or_spliced_plan_is_refused_by_every_command(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[bytes, bytes],
        case: str) -> None:
    raw = _damaged(plans)[case]
    plan_path = tmp_path / "p" / "plan.toml"
    plan_path.parent.mkdir()
    plan_path.write_bytes(plans[0])
    read_plan(plan_path)  # the whole plan, read before
    plan_path.write_bytes(raw)
    before = h.tree(plan_path.parent)
    for command in COMMANDS:
        name, *flags = command.split()
        out = {"slurm": ["--out", str(tmp_path / "o")], "report": ["--out",
               str(tmp_path / "o.html")], "replan": ["--out", str(tmp_path / "o")]}
        rc = main([name, str(plan_path), *flags, *out.get(name, [])])
        err = capsys.readouterr().err
        assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, (command, err)
        assert str(plan_path) in err, (command, err)
        assert not (tmp_path / "o").exists() and not (tmp_path / "o.html").exists()
    # The Progress screen reads the plan as `run` does.
    with pytest.raises(InputError):
        prepare.load_plan(str(plan_path))
    assert h.tree(plan_path.parent) == before


def test_a_cut_plan_is_named_as_such(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     plans: tuple[bytes, bytes]) -> None:
    plan_path = tmp_path / "plan.toml"
    plan_path.write_bytes(plans[0][:_boundaries(plans[0])[3]])
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert "header states 6 runs and 0 kept aside, its tables hold 3 and 0" in err, err
    assert "cut short or spliced" in err


def test_the_whole_plan_reads_and_its_seal_names_its_tables(
        tmp_path: Path, plans: tuple[bytes, bytes]) -> None:
    plan_path = tmp_path / "plan.toml"
    plan_path.write_bytes(plans[0])
    plan = read_plan(plan_path)
    seal = plan_seal.read(plans[0])
    assert seal is not None and (seal.runs, seal.held) == (len(plan.runs), 0)
    assert plan_toml(plan).encode() == plans[0]


def test_an_edit_of_the_run_tables_is_refused_until_its_author_unseals_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], plans: tuple[bytes, bytes]
        ) -> None:
    plan_path = tmp_path / "plan.toml"
    text = plans[0].decode()
    edited = text.replace("steps = 30", "steps = 31", 1)
    plan_path.write_text(edited)
    assert main(["status", str(plan_path)]) == 2
    assert "SHA-256 differs" in capsys.readouterr().err
    plan_path.write_text(plan_seal.unsealed(edited))
    assert read_plan(plan_path).runs[0].steps == 31


def test_a_plan_without_a_seal_reads_as_it_stands(tmp_path: Path,
                                                   plans: tuple[bytes, bytes]) -> None:
    """Plans written before the seal, or rewritten by a TOML tool, have no comments."""
    import tomllib

    import tomli_w

    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(tomli_w.dumps(tomllib.loads(plans[0].decode())))
    assert len(read_plan(plan_path).runs) == 6

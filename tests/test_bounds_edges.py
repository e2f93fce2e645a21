"""Extremes at the edges of the bounds: catalog figures too small or too large, an empty
command, empty list arguments, a corpus that fails at once. Each is one line naming the
file and the field, exit 2, no traceback; what is within the bounds plans with no `inf`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from planner.spec.shipped import shipped
from tests.run_fixtures import harness as h


def _catalog(tmp_path: Path, field: str, value: Any) -> Path:
    data = tomllib.loads(shipped("cards.toml").read_text())
    data["cards"]["a6000"][field] = value
    path = tmp_path / "cards.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def _one_line(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    rc = main(argv)
    out = capsys.readouterr()
    assert rc == 2 and out.err.count("\n") == 1 and "Traceback" not in out.err, out
    return out.err


COMMANDS = {
    "plan": ["--preset", "ablation-7d", "--created", "2026-01-01T00:00:00"],
    "compare": ["compare", "--preset", "ablation-7d"],
    "advise": ["advise", "--preset", "ablation-7d", "--counts", "1", "--windows", "3",
               "--cards", "a6000"],
}


@pytest.mark.parametrize(("field", "value"), [
    ("bandwidth_gbps", 5e-324), ("bf16_tflops", 5e-324), ("fp32_tflops", 5e-324),
    ("nvlink_gbps", 5e-324), ("price_per_card_hour", 1e308),
    ("usable_memory_gib", 1e308), ("memory_gib", 1e308), ("context_gib", 1e308),
    ("tdp_w", 1e308)])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_catalog_extremes_are_refused_by_a_bound(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float,
        command: str) -> None:
    catalog = _catalog(tmp_path, field, value)
    out = tmp_path / "out"
    extra = ["--out", str(out)] if command == "plan" else []
    err = _one_line(capsys, [*COMMANDS[command], "--catalog", str(catalog), *extra])
    assert f"{catalog}: cards.a6000.{field}" in err, err
    assert not out.exists()


@pytest.mark.parametrize(("field", "value"), [
    ("bandwidth_gbps", 1e-3), ("bf16_tflops", 1e-3), ("bf16_tflops", 0.0),
    ("price_per_card_hour", 1e6), ("usable_memory_gib", 1e5), ("memory_gib", 1e5),
    ("bf16_tflops", 1e6)])
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_catalog_figures_at_the_bounds_plan_with_no_inf(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, value: float,
        command: str) -> None:
    catalog = _catalog(tmp_path, field, value)
    out = tmp_path / "out"
    extra = ["--out", str(out)] if command == "plan" else []
    assert main([*COMMANDS[command], "--catalog", str(catalog), *extra]) == 0
    printed = capsys.readouterr()
    text = printed.out + printed.err
    if command == "plan":
        text += (out / "plan.toml").read_text()
        assert main(["run", "--dry-run", str(out / "plan.toml")]) == 0, capsys.readouterr()
        text += capsys.readouterr().out
    assert not re.search(r"\b(inf|nan|infinity)\b", text, re.IGNORECASE), text


@pytest.mark.parametrize("section", ["ablation", "robustness", "embedding"])
@pytest.mark.parametrize("command", ["", "   ", "\t\n"])
def test_an_empty_command_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     section: str, command: str) -> None:
    if section == "embedding":
        data = tomllib.loads(shipped("embedding-7d.toml").read_text())
        data["embedding"]["command"] = command
        field = "embedding.command"
    else:
        data = h.preset(seeds=(0,))
        if section == "robustness":
            data["ablation"]["robustness"][0]["command"] = command
            field = "ablation.robustness[0].command"
        else:
            data["ablation"]["command"] = command
            field = "ablation.command"
    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(data))
    err = _one_line(capsys, ["--preset", str(src), "--out", str(tmp_path / "out")])
    assert field in err and "empty" in err, err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("argv", [
    ["compare", "--cards", ""], ["compare", "--cards", " , "], ["advise", "--cards", ""],
    ["advise", "--counts", ""], ["advise", "--windows", ","]])
def test_an_empty_list_argument_is_refused(capsys: pytest.CaptureFixture[str],
                                           argv: list[str]) -> None:
    err = _one_line(capsys, argv)
    assert argv[1] in err, err


@pytest.mark.parametrize("option", [("--cards", ""), ("--cards", ",")])
def test_an_empty_card_list_is_refused_by_run(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              option: tuple[str, str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    err = _one_line(capsys, ["run", "--dry-run", str(plan_path), *option])
    assert "--cards" in err


@pytest.mark.parametrize(("text", "why"), [
    ('{"id":"a","text":"x y"}\n{"id":"a","text":"z"}\n', "duplicate id"),
    ("", "no documents")])
def test_a_corpus_that_fails_at_once_prints_only_the_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, why: str) -> None:
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(text)
    err = _one_line(capsys, ["--preset", "embedding-7d", "--corpus", str(corpus), "--out",
                             str(tmp_path / "out")])
    assert why in err and err.startswith("campaign-planner: error:"), err

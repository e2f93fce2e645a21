"""What-if flags: `--card`, `--cards`, `--days`, `--hours` and `--seeds` change the preset
for one command, name themselves in the plan, and export exactly what the preset edited
the same way exports."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from planner.spec.shipped import shipped

CREATED = "2026-01-01T00:00:00+00:00"
BLOCK = re.compile(r"^overrides = \[\n(?:.*\n)*?\]\n", re.MULTILINE)


def _preset(name: str) -> dict[str, Any]:
    return tomllib.loads(shipped(f"{name}.toml").read_text())


def _export(out: Path, *argv: str) -> tuple[str, str]:
    assert main([*argv, "--out", str(out), "--created", CREATED, "--solver", "fast"]) == 0
    return (out / "plan.toml").read_text(), (out / "order.toml").read_text()


def _edited(tmp_path: Path, name: str, campaign: dict[str, Any],
            seeds: list[int] | None = None) -> Path:
    data = _preset(name)
    for key, value in campaign.items():
        if value is None:
            data["campaign"].pop(key, None)
        else:
            data["campaign"][key] = value
    if seeds is not None:
        data[data["campaign"]["kind"]]["seeds"] = seeds
    path = tmp_path / f"{name}-edited.toml"
    path.write_text(tomli_w.dumps(data))
    return path


CASES = [
    ("ablation-7d", ["--cards", "8"], {"cards": 8}, None, ["cards 4 → 8 (command line)"]),
    ("ablation-7d", ["--days", "3"], {"window_days": 3}, None,
     ["window 7 days → 3 days (command line)"]),
    ("ablation-7d", ["--days", "14", "--seeds", "5"], {"window_days": None, "window_hours": 336.0},
     [0, 1, 2, 3, 4], ["window 7 days → 14 days (336 h) (command line)",
                       "seeds 0–2 (3 seeds) → 0–4 (5 seeds) (command line)"]),
    ("ablation-7d", ["--card", "h100-sxm", "--hours", "100", "--seeds", "0,1,5"],
     {"card": "h100-sxm", "window_days": None, "window_hours": 100.0}, [0, 1, 5],
     ["card a6000 → h100-sxm (command line)", "window 7 days → 100 h (command line)",
      "seeds 0–2 (3 seeds) → 0, 1, 5 (command line)"]),
    ("adaptation-30d", ["--cards", "2", "--seeds", "7,"], {"cards": 2}, [7], None),
    ("embedding-7d", ["--card", "l40s", "--cards", "2"], {"card": "l40s", "cards": 2}, None,
     None),
]


@pytest.mark.parametrize(("name", "flags", "campaign", "seeds", "words"), CASES)
def test_flags_export_what_the_edited_preset_exports(
        tmp_path: Path, name: str, flags: list[str], campaign: dict[str, Any],
        seeds: list[int] | None, words: list[str] | None) -> None:
    plan_a, order_a = _export(tmp_path / "flags", "--preset", name, *flags)
    edited = _edited(tmp_path, name, campaign, seeds)
    plan_b, order_b = _export(tmp_path / "edited", "--preset", str(edited))
    assert order_a == order_b
    assert "(command line)" not in plan_b
    got = tomllib.loads(plan_a)["assumptions"]["overrides"]
    assert len(got) == len([f for f in flags if f.startswith("--")]) - \
        ("--hours" in flags and "--days" in flags)
    if words is not None:
        assert got == words
    # The only lines that differ are those naming the overrides.
    assert BLOCK.sub("", plan_a) == plan_b
    assert tomllib.loads(plan_a)["campaign"]["id"] == tomllib.loads(plan_b)["campaign"]["id"]


def test_the_summary_names_each_override(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--preset", "ablation-7d", "--cards", "8", "--created", CREATED]) == 0
    out = capsys.readouterr().out
    assert "Override  cards 4 → 8 (command line)" in out
    assert "Window    7 days × 8 × NVIDIA RTX A6000" in out
    assert main(["--preset", "ablation-7d", "--seeds", "4", "--json", "--created",
                 CREATED]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["overrides"] == ["seeds 0–2 (3 seeds) → 0–3 (4 seeds) (command line)"]
    assert doc["summary"]["matrix_runs"] == 24


@pytest.mark.parametrize(("flags", "message"), [
    (["--cards", "0"], "--cards: must be at least 1"),
    (["--cards", "4097"], "--cards: must be at most 4096"),
    (["--cards", "two"], "--cards: not a whole number"),
    (["--days", "-1"], "--days: must be more than 0"),
    (["--days", "0"], "--days: must be more than 0"),
    (["--hours", "nan"], "--hours: must be more than 0"),
    (["--card", "nope"], "--card: unknown card 'nope'"),
    (["--seeds", "3,3"], "--seeds: seed 3 is listed twice"),
    (["--seeds", "0"], "--seeds: 0 seeds"),
    (["--seeds", ""], "--seeds: no seed given"),
    (["--seeds", ","], "--seeds: an empty item"),
    (["--seeds", "1,,2"], "--seeds: an empty item"),
    (["--seeds", "1,x"], "--seeds: not a whole number"),
    (["--days", "7", "--hours", "100"], "--days: give --days or --hours, not both"),
    (["--preset", "embedding-7d", "--seeds", "3"], "--seeds: a embedding campaign has no seeds"),
])
def test_a_bad_value_is_one_line_and_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        message: str) -> None:
    out = tmp_path / "out"
    assert main([*flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not out.exists()


def test_compare_takes_a_count_or_card_models_and_the_other_flags(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--preset", "ablation-7d", "--cards", "8", "--days", "3",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["card"] == "a6000" and {r["cards"] for r in rows} == {8}
    assert main(["compare", "--preset", "ablation-7d", "--cards", "a6000,l40s", "--seeds",
                 "5", "--card", "l40s"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Override  card a6000 → l40s (command line)\n"
                          "Override  seeds 0–2 (3 seeds) → 0–4 (5 seeds) (command line)\n")
    assert "/30 " in out  # 6 configurations × 5 seeds
    assert main(["compare", "--cards", "0"]) == 2
    assert "--cards: must be at least 1" in capsys.readouterr().err


def test_advise_pins_the_search_and_exports_what_the_edited_preset_exports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    common = ["--created", CREATED, "--json", "--goal", "seeds:1"]
    assert main(["advise", "--preset", "ablation-30d", "--card", "a6000", "--cards", "2",
                 "--days", "30", "--seeds", "4", "--out", str(tmp_path / "a"), *common]) == 0
    options = json.loads(capsys.readouterr().out)
    assert [(o["card"], o["cards"], o["window_days"]) for o in options] == [("a6000", 2, 30)]
    edited = _edited(tmp_path, "ablation-30d", {}, [0, 1, 2, 3])
    assert main(["advise", "--preset", str(edited), "--cards", "a6000", "--counts", "2",
                 "--windows", "30", "--out", str(tmp_path / "b"), *common]) == 0
    assert json.loads(capsys.readouterr().out) == options
    plan_a = (tmp_path / "a" / "plan.toml").read_text()
    plan_b = (tmp_path / "b" / "plan.toml").read_text()
    assert "seeds 0–4 (5 seeds) → 0–3 (4 seeds) (command line)" in plan_a
    assert BLOCK.sub("", plan_a) == plan_b
    assert (tmp_path / "a" / "order.toml").read_text() == \
        (tmp_path / "b" / "order.toml").read_text()


@pytest.mark.parametrize(("flags", "message"), [
    (["--cards", "4", "--counts", "2"], "--cards: give --cards N or --counts, not both"),
    (["--card", "a6000", "--cards", "a40"], "--card: give --card KEY or --cards A,B"),
    (["--days", "7", "--windows", "3"], "--days: give --days/--hours or --windows"),
    (["--hours", "100"], "--hours: advise orders whole days"),
    (["--days", "14"], "--days: 14 days cannot be ordered"),
    (["--card", "nope"], "--card: unknown card 'nope'"),
    (["--seeds", "3,3"], "--seeds: seed 3 is listed twice"),
])
def test_advise_refuses_flags_that_contradict_its_search(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: list[str],
        message: str) -> None:
    assert main(["advise", *flags, "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "o").exists()


def test_the_ui_refuses_a_bad_flag_before_it_draws(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--tui", "--cards", "0"]) == 2
    err = capsys.readouterr().err
    assert err == "campaign-planner: error: --cards: must be at least 1\n"

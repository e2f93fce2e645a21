"""The small print of the headless commands: counts said one way, plurals, columns apart,
nothing drawn where a value is missing, the runs in --json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner.advise.goal import Goal
from planner.advise.model import Space
from planner.advise.render import headline, render, span
from planner.advise.search import advise
from planner.cli.main import main
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset


def test_one_order_is_said_in_the_singular_and_one_count_alone() -> None:
    preset, _ = load_preset("ablation-7d")
    adv = advise(preset, load_catalog(), Space(("a6000",), (4,), (7,)), Goal("all"))
    text = render(adv)
    assert text.splitlines()[0] == ("ablation-7d: 1 order planned — 1 card model × count 4 × "
                                    "7 days; goal: all")
    assert "1 order meets the goal" in text and "4–4" not in text
    assert "●: the preset's own order" in text
    assert [span([4]), span([1, 2]), span([1, 2, 3]), span([1, 2, 4])] == [
        "4", "1, 2", "1–3", "1, 2, 4"]


def test_the_headline_counts_what_the_progress_line_counts(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    # Cards left out for memory are searched, not planned: both numbers are said.
    monkeypatch.setattr("planner.cli.advise.PROGRESS_AFTER_S", -1.0)
    assert main(["advise", "--preset", "ablation-7d", "--counts", "1", "--windows", "7"]) == 0
    got = capsys.readouterr()
    total = len(load_catalog().cards)
    assert got.err == f"advise: planning {total} orders…\n"
    assert got.out.startswith(f"ablation-7d: {total - 2} of {total} orders planned — ")
    preset, _ = load_preset("ablation-7d")
    adv = advise(preset, load_catalog(), Space(None, (1, 2), (7,)), Goal("all"))
    assert adv.left_out and headline(adv).startswith(f"ablation-7d: {adv.planned} of ")


def test_compare_keeps_two_spaces_between_step_time_cells(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["compare", "--preset", "ablation-7d", "--cards", "a6000,a40,rtx6000ada"]) == 0
    out = capsys.readouterr().out
    table = out[out.index("Step time, s per optimizer step"):].splitlines()[1:8]
    for line in table:
        cells = line[len("  no-act-ckpt      "):]
        assert ")" not in cells or ")  " in cells or cells.rstrip().endswith(")"), line
        assert "  " in cells.strip(), line


def test_json_lists_the_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--preset", "ablation-7d", "--json", "--created", "2026-01-01T00:00:00Z"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["runs"]) == doc["summary"]["matrix_runs"] == 18
    assert {"id", "start_h", "end_h", "card", "command"} <= set(doc["runs"][0])


def test_status_shows_a_dash_for_a_run_not_started(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plan"
    assert main(["--preset", "ablation-7d", "--out", str(out),
                 "--created", "2026-01-01T00:00:00Z"]) == 0
    capsys.readouterr()
    assert main(["status", str(out / "plan.toml")]) == 0
    text = capsys.readouterr().out
    assert "—–" not in text and "–—" not in text
    row = next(line for line in text.splitlines() if "baseline-s0" in line)
    assert " — " in row


def test_a_partial_measurement_without_a_file_reads_as_english() -> None:
    from planner.campaign import plan_campaign
    from tests.test_measure_plan import measurements

    preset, _ = load_preset("ablation-7d")
    m = measurements(preset)
    m = m.model_copy(update={"configs": m.configs[:2], "partial": True, "file": ""})
    plan = plan_campaign(preset, load_catalog(), measurements=m)
    assert any(w.startswith("the measurements are partial (stopped early)")
               for w in plan.warnings)

"""`report` reads what `status` and `run` read: the journal in the plan's own folder by
default; and `--from-preset` takes the plan command's what-if flags."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.planfile.export import read_plan
from planner.run.params import run_fingerprint
from tests.test_report import CREATED, export, figure_json

pytest.importorskip("plotly", reason="the report needs the `report` extra (plotly)")


def _journal(folder: Path, runs: int = 2) -> list[str]:
    """A journal in `folder` where the plan's first `runs` runs finished; their ids."""
    plan = read_plan(folder / "plan.toml")
    origin = time.time() - 40 * 3600
    events: list[dict[str, object]] = [{"t": origin, "ev": "executor", "cards": [0, 1, 2, 3],
                                        "window_start": origin, "pid": 1}]
    for run in plan.runs[:runs]:
        t0 = origin + run.start_h * 3600
        events += [{"t": t0, "ev": "started", "run": run.id, "attempt": 1, "cards": run.card,
                    "fingerprint": run_fingerprint(run), "pid": 0},
                   {"t": t0 + (run.end_h - run.start_h) * 3600, "ev": "exited",
                    "run": run.id, "attempt": 1, "code": 0, "outcome": "finished"}]
    (folder / "campaign-run").mkdir()
    (folder / "campaign-run" / "journal.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return [r.id for r in plan.runs[:runs]]


def test_the_journal_beside_the_plan_is_read_without_workdir(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = export(tmp_path)
    done = _journal(out)
    capsys.readouterr()
    assert main(["report", str(out / "plan.toml")]) == 0
    journal = out.resolve() / "campaign-run" / "journal.jsonl"
    assert capsys.readouterr().out == f"Wrote {out / 'report.html'} (what ran, from {journal})\n"
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Actual against planned" in html
    actual = next(t for t in figure_json(html)["data"] if t.get("name") == "actual")
    assert sorted(i[0] for i in actual["customdata"]) == sorted(done)
    # The same page as with --workdir naming that folder.
    other = tmp_path / "with-workdir.html"
    assert main(["report", str(out), "--workdir", str(out), "--out", str(other)]) == 0
    assert "<h2>Actual against planned" in other.read_text(encoding="utf-8")


def test_a_plan_linked_elsewhere_reads_the_journal_where_it_lives(tmp_path: Path) -> None:
    out = export(tmp_path)
    _journal(out)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "plan.toml").symlink_to(out / "plan.toml")
    assert main(["report", str(elsewhere / "plan.toml")]) == 0
    assert "<h2>Actual against planned" in (elsewhere / "report.html").read_text(
        encoding="utf-8")


def test_no_journal_no_actual_section(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = export(tmp_path)
    capsys.readouterr()
    assert main(["report", str(out)]) == 0
    assert capsys.readouterr().out == f"Wrote {out / 'report.html'}\n"
    assert "Actual against planned" not in (out / "report.html").read_text(encoding="utf-8")


def test_from_preset_takes_the_what_if_flags(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--from-preset", "ablation-7d", "--cards", "8", "--days", "3",
                 "--seeds", "2", "--card", "a40", "--created", CREATED]) == 0
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    # The plan command's plan of the same changes, down to its id and overrides.
    plan_dir = tmp_path / "planned"
    assert main(["--preset", "ablation-7d", "--cards", "8", "--days", "3", "--seeds", "2",
                 "--card", "a40", "--out", str(plan_dir), "--created", CREATED]) == 0
    plan = read_plan(plan_dir / "plan.toml")
    assert plan.campaign.cards == 8 and plan.campaign.window_hours == 72
    assert f"plan id {plan.campaign.id}</title>" in html
    assert any("cards 4 → 8" in o for o in plan.assumptions.overrides)
    assert f"8 × {plan.campaign.card_name} for 72 h" in html
    # The preset as it is gives another plan: the flags were not ignored.
    assert main(["report", "--from-preset", "ablation-7d", "--out", "plain.html"]) == 0
    assert "4 × NVIDIA RTX A6000 for 168 h" in (tmp_path / "plain.html").read_text(
        encoding="utf-8")


@pytest.mark.parametrize("args, says", [
    (["--cards", "0"], "--cards"),
    (["--days", "3", "--hours", "40"], "give --days or --hours, not both"),
    (["--card", "no-such-card"], "--card"),
    (["--seeds", "x"], "--seeds"),
])
def test_bad_what_if_values_are_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str],
                                        args: list[str], says: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--from-preset", "ablation-7d", *args]) == 2
    err = capsys.readouterr().err
    assert says in err and err.count("\n") == 1 and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_what_if_beside_a_plan_file_is_refused(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = export(tmp_path)
    capsys.readouterr()
    assert main(["report", str(out), "--cards", "8"]) == 2
    err = capsys.readouterr().err
    assert "--cards: changes a preset: give it with --from-preset" in err
    assert not (out / "report.html").exists()

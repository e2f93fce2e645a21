"""The Export screen writes report.html beside plan.toml and order.toml, and says where."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import TextArea

from tests.test_tui import SIZE, make_app

pytest.importorskip("plotly", reason="the report needs the `report` extra (plotly)")


async def test_export_screen_writes_the_report_and_prints_its_path(tmp_path: Path) -> None:
    out = tmp_path / "tui"
    app = make_app(out_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")
        await pilot.pause()
        preview = app.screen.query_one("#text-report", TextArea).text
        assert preview.startswith("report.html") and "Press r" in preview
        await pilot.press("r")
        await pilot.pause()
        page = out / "report.html"
        assert page.exists() and "plotly.js v" in page.read_text(encoding="utf-8")
        message = str(app.screen.query_one("#export-message").render())
        assert f"Wrote {page}" in message
        # Writing again asks first; "n" keeps the file as it is.
        page.write_text("mine", encoding="utf-8")
        await pilot.press("r")
        await pilot.pause()
        assert "already exists" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await pilot.pause()
        assert page.read_text(encoding="utf-8") == "mine"
        await pilot.press("r", "y")
        await pilot.pause()
        assert "plotly.js v" in page.read_text(encoding="utf-8")
        assert sorted(p.name for p in out.iterdir()) == ["report.html"]


def _question(app: object) -> str:
    return str(app.screen.query_one("#question").render())  # type: ignore[attr-defined]


def _message(app: object) -> str:
    return str(app.screen.query_one("#export-message").render())  # type: ignore[attr-defined]


async def test_a_report_beside_another_plans_plan_toml_is_asked_about(tmp_path: Path) -> None:
    from planner.cli.main import main as cli_main
    from tests.conftest import CREATED

    out = tmp_path / "plan"
    assert cli_main(["--preset", "ablation-3d", "--out", str(out),
                     "--created", CREATED.isoformat()]) == 0
    theirs = (out / "plan.toml").read_bytes()
    app = make_app(out_dir=out)  # ablation-7d: another plan
    async with app.run_test(size=SIZE) as pilot:
        mine = app.workspace.plan.campaign.id
        await pilot.press("6", "r")
        await pilot.pause()
        question = _question(app)
        assert "plan ablation-3d-" in question and f"plan {mine}" in question
        await pilot.press("n")
        await pilot.pause()
        assert not (out / "report.html").exists() and "Nothing written" in _message(app)
        await pilot.press("r")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        page = (out / "report.html").read_text(encoding="utf-8")
        assert f"plan id {mine}</title>" in page
        assert "of plan ablation-3d-" in _message(app) and "w writes" in _message(app)
        assert (out / "plan.toml").read_bytes() == theirs
        # Writing this campaign's plan over theirs: the two agree, and r asks only about
        # replacing the report.
        await pilot.press("w")
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert f'id = "{mine}"' in (out / "plan.toml").read_text(encoding="utf-8")
        assert "r writes" not in _message(app)
        await pilot.press("r")
        await pilot.pause()
        assert "already exists. Overwrite?" in _question(app)


async def test_a_plan_written_beside_another_plans_report_says_so(tmp_path: Path) -> None:
    out = tmp_path / "plan"
    out.mkdir()
    (out / "report.html").write_text("<title>x · ablation campaign · plan id "
                                     "ablation-3d-abcdef</title>", encoding="utf-8")
    app = make_app(out_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6", "w")
        await pilot.pause()
        assert (out / "plan.toml").exists()
        message = _message(app)
        assert "report.html beside them is of plan ablation-3d-abcdef" in message
        assert "r writes this plan's" in message


async def test_no_plan_toml_beside_it_no_question(tmp_path: Path) -> None:
    out = tmp_path / "fresh"
    app = make_app(out_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6", "r")
        await pilot.pause()
        assert (out / "report.html").exists() and "Wrote" in _message(app)
        (out / "plan.toml").write_text("not a plan", encoding="utf-8")
        await pilot.press("r")
        await pilot.pause()
        assert "of no plan that can be read" in _question(app)

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

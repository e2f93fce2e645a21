"""The window's capacity in the terminal UI: shown on Fit, filled by one key, undone."""

from __future__ import annotations

import pytest
from textual.widgets import Static

from planner.errors import InputError
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset
from screens import state
from tests.test_tui import FROZEN, SIZE, make_app


async def test_fill_to_capacity_on_fit_and_undo() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m")  # 30 days: room for more seeds
        await pilot.pause()
        cap = app.workspace.plan.summary.capacity
        assert cap is not None and cap.seed_sets is not None and cap.seed_sets > 3
        await pilot.press("3")  # the Fit screen
        await pilot.pause()
        top = str(app.screen.query_one("#top", Static).render())
        assert f"up to {cap.seed_sets} complete seed sets (3 asked; proven)" in top
        await pilot.press("f")
        await pilot.pause()
        seeds = app.workspace.preset.training.seeds  # type: ignore[union-attr]
        assert seeds == list(range(cap.seed_sets))
        s = app.workspace.plan.summary
        assert s.runs_scheduled == s.runs_total
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert app.workspace.preset.training.seeds == [0, 1, 2]  # type: ignore[union-attr]


def test_fill_to_capacity_sets_versions_and_refuses_when_nothing_fits() -> None:
    catalog = load_catalog()
    p = load_preset(str(FROZEN / "embedding-7d.toml"))[0]
    ws = state.start(p, catalog)
    cap = ws.plan.summary.capacity
    assert cap is not None and cap.versions
    filled = state.fill_to_capacity(p, ws.plan)
    assert filled.embedding is not None and filled.embedding.versions == cap.versions
    tiny = state.edit(load_preset(str(FROZEN / "ablation-7d.toml"))[0], "campaign",
                      window_days=None, window_hours=10.0)
    with pytest.raises(InputError, match="no complete seed set"):
        state.fill_to_capacity(tiny, state.start(tiny, catalog).plan)

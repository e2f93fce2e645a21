"""Nothing is cut at 80×24: every screen, on the campaigns a newcomer opens, scanned for
a widget whose text is wider than its room (see tests/clipping.py)."""

from __future__ import annotations

from typing import Any

import pytest

from screens import state
from tests.clipping import cut
from tests.test_tui import make_app
from tests.test_tui_measure import fake_measure, measured

SMALL = (80, 24)
KEYS = ("1", "2", "3", "4", "5", "6", "7", "f1")


async def _scan(app: Any, pilot: Any) -> dict[str, list[str]]:
    found = {}
    for key in KEYS:
        await pilot.press(key)
        await pilot.pause()
        await app.workers.wait_for_complete()
        await pilot.pause()
        found[key] = cut(app.screen)
        if key == "f1":
            await pilot.press("escape")
    return {k: v for k, v in found.items() if v}


@pytest.mark.parametrize("preset", ["ablation-7d", "embedding-7d", "adaptation-30d"])
async def test_no_screen_cuts_a_shipped_campaign(preset: str) -> None:
    app = make_app(preset)
    async with app.run_test(size=SMALL) as pilot:
        assert await _scan(app, pilot) == {}


async def test_no_screen_cuts_scaled_figures() -> None:
    # Figures scaled to another card carry the longest sources: `scaled from … (range)`.
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        app.attempt(lambda p: state.set_card(p, "a40"))
        await pilot.pause()
        assert await _scan(app, pilot) == {}


async def test_no_screen_cuts_figures_measured_on_a_long_named_device() -> None:
    app = make_app()
    m = measured(app.workspace.preset)
    m = m.model_copy(update={"device": m.device.model_copy(
        update={"name": "CPU AMD EPYC 7763 64-Core Processor (fake-tensor estimate)",
                "kind": "cpu"})})
    app.measure_fn = fake_measure(result=m)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("4", "m")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert "measured" in str(app.screen.query_one("#results-legend").render())
        assert await _scan(app, pilot) == {}


async def test_the_scan_sees_a_cut() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("6")
        await pilot.pause()
        app.screen.query_one("#text-plan").soft_wrap = False
        await pilot.pause()
        assert any("#text-plan: lines wider" in line for line in cut(app.screen))


@pytest.mark.parametrize("preset", ["ablation-7d", "embedding-7d"])
async def test_the_key_bar_keeps_undo_with_the_timeline_focused(preset: str) -> None:
    # The timeline's own keys are named on the line under it: the key bar keeps Undo.
    app = make_app(preset)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("3", "t")
        await pilot.pause()
        assert app.screen.query_one("#timeline").has_focus
        assert cut(app.screen) == []
        keys = " ".join(str(k.render()) for k in app.screen.query("FooterKey"))
        assert "Undo" in keys and "Zoom" not in keys
        assert "+/− zoom" in str(app.screen.query_one("#timeline-cursor").render())

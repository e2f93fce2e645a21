"""Undo takes back what the fields show, not only the preset: the field being typed in
too, and the fields of a screen left while the undo happened."""

from __future__ import annotations

from textual.widgets import Input, RadioButton

from tests.test_tui import make_app, type_into

HOURS = "#f-campaign-window-hours Input"


async def test_undo_shows_the_hours_it_brings_back_in_the_focused_field() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await type_into(pilot, HOURS, "100")
        field = app.screen.query_one(HOURS, Input)
        assert field.has_focus and app.workspace.preset.campaign.window_hours == 100.0
        before = [p.campaign.window_hours for p in app.workspace.history]
        await pilot.press("ctrl+z")
        await pilot.pause()
        shown = app.workspace.preset.campaign.window_hours
        assert shown == before[-1] and field.value == f"{shown:g}"
        # Back to the 7 days the preset started with: no custom hours, the radio on 7 days.
        while app.workspace.history:
            await pilot.press("ctrl+z")
            await pilot.pause()
        assert app.workspace.preset.campaign.window_days == 7
        assert field.value == "" and field.has_focus
        dots = ["●" in str(b.render()) for b in app.screen.query(RadioButton)]
        assert dots == [False, True, False, False]
        # Typing goes on from the value shown, as a fresh edit.
        await pilot.press("4", "8")
        await pilot.pause()
        assert app.workspace.preset.campaign.window_hours == 48.0


async def test_undo_on_another_screen_reaches_the_field_left_focused() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await type_into(pilot, "#f-campaign-cards Input", "2")
        assert app.workspace.preset.campaign.cards == 2
        await pilot.press("f4")  # Fit, while the cards field keeps the Campaign focus
        await pilot.pause()
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert app.workspace.preset.campaign.cards == 4
        await pilot.press("f2")
        await pilot.pause()
        field = app.screen.query_one("#f-campaign-cards Input", Input)
        assert field.value == "4"


async def test_a_refused_value_stays_where_it_was_typed() -> None:
    # Without an undo, the field being typed in keeps its text, so it can be fixed.
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await type_into(pilot, "#f-campaign-cards Input", "0")
        field = app.screen.query_one("#f-campaign-cards Input", Input)
        assert app.workspace.error is not None and field.value == "0"
        assert app.workspace.preset.campaign.cards == 4

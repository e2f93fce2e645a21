"""The Advise screen driven with Textual's pilot: the options, adopting one, the goal."""

from __future__ import annotations

from typing import Any

import pytest
from textual.widgets import DataTable

from planner.advise.goal import Goal
from planner.advise.model import Space
from planner.advise.search import advise, order_preset
from planner.campaign import plan_campaign
from screens.advise import AdviseScreen
from tests.conftest import CREATED
from tests.test_tui import make_app, type_into

SIZE = (100, 32)


async def searched(pilot: Any) -> AdviseScreen:
    """Wait until the search in progress has been shown."""
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, AdviseScreen)
    return screen


async def adopt(pilot: Any, card: str, cards: int, days: int) -> None:
    """Select the option for that order and press Enter."""
    screen = await searched(pilot)
    assert screen.result is not None
    keys = [(o.card, o.cards, o.window_days) for o in screen.result.options]
    table = screen.query_one("#advise-options", DataTable)
    table.focus()
    table.move_cursor(row=keys.index((card, cards, days)))
    await pilot.press("enter")
    await searched(pilot)


async def test_the_screen_lists_what_the_search_finds() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        screen = await searched(pilot)
        expected = advise(app.workspace.preset, app.catalog, Space(None), Goal("all"))
        assert screen.result == expected
        table = screen.query_one("#advise-options", DataTable)
        assert table.row_count == len(expected.options)
        first = expected.options[0]
        assert [str(c) for c in table.get_row_at(0)[2:5]] == [
            first.card, str(first.cards), str(first.window_days)]
        assert "fewest card-hours first" in str(screen.query_one("#advise-message").render())
        assert "card-h" in [str(c.label) for c in table.columns.values()]
        assert "—" in str(screen.query_one("#advise-frontier").render())


async def test_enter_adopts_the_order_and_replans() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        original = app.workspace.preset
        await pilot.press("7")
        await adopt(pilot, "l40s", 4, 7)
        c = app.workspace.preset.campaign
        assert (c.card, c.cards, c.window_days) == ("l40s", 4, 7)
        direct = plan_campaign(order_preset(original, app.catalog, "l40s", 4, 7), app.catalog,
                               created=CREATED)
        assert app.workspace.plan == direct
        assert app.workspace.plan.summary.matrix_runs_fit == 18


async def test_adopting_options_never_drifts_the_figures() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        original = app.workspace.preset
        await pilot.press("7")
        await adopt(pilot, "l40s", 4, 7)
        await adopt(pilot, "h100-sxm", 2, 7)
        # The preset keeps the figure on its anchor; only the plan derives it for the card.
        step = app.workspace.preset.ablation.baseline.step_time_s  # type: ignore[union-attr]
        assert (step.source, step.card) == ("entered", "a6000")
        planned = app.workspace.plan.assumptions.figures[0].step_time_s
        assert (planned.source, planned.device) == ("scaled", "NVIDIA RTX A6000")
        await adopt(pilot, "a6000", 5, 7)
        back = app.workspace.preset
        assert back.ablation == original.ablation
        assert back.campaign.card == "a6000" and back.campaign.cards == 5


async def test_the_goal_field_changes_the_search() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("7")
        screen = await searched(pilot)
        every = len(screen.result.options) if screen.result else 0
        await type_into(pilot, "#f-advise-goal Input", "seeds:1")
        screen = await searched(pilot)
        assert screen.result is not None and screen.result.goal == "seeds:1"
        assert len(screen.result.options) > every
        await type_into(pilot, "#f-advise-goal Input", "versions:2")
        screen = await searched(pilot)
        assert "versions:K is for embedding campaigns" in str(
            screen.query_one("#advise-message").render())
        await type_into(pilot, "#f-advise-goal Input", "most")
        await pilot.pause()
        assert "not a goal" in str(screen.query_one("#advise-message").render())


async def test_advise_is_in_the_palette() -> None:
    app = make_app()
    async with app.run_test(size=SIZE):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert "Go to Advise" in titles


def _planned(app: Any) -> tuple[str, int, int]:
    c = app.workspace.preset.campaign
    return (c.card, c.cards, c.window_days)


async def _highlight_second(pilot: Any) -> tuple[str, int, int]:
    """Open Advise, wait for its list, highlight the second order; that order."""
    await pilot.press("7")
    screen = await searched(pilot)
    assert screen.result is not None
    table = screen.query_one("#advise-options", DataTable)
    table.move_cursor(row=1)
    o = screen.result.options[1]
    return (o.card, o.cards, o.window_days)


@pytest.mark.parametrize("focus", ["#advise-options", "#f-advise-goal Input",
                                   "#f-advise-cards Input", "#adopt", None])
async def test_enter_adopts_from_every_focus_position(focus: str | None) -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        wanted = await _highlight_second(pilot)
        assert _planned(app) != wanted
        screen = app.screen
        if focus is None:
            screen.set_focus(None)
        else:
            screen.query_one(focus).focus()
        await pilot.pause()
        await pilot.press("enter")
        await searched(pilot)
        assert _planned(app) == wanted
        if focus is not None and "Input" in focus:
            assert screen.query_one(focus).has_focus  # the focus stays in the field


async def test_the_adopt_button_and_the_palette_adopt() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        wanted = await _highlight_second(pilot)
        assert app.screen.query_one("#adopt").region.bottom <= 23  # in sight at 80×24
        await pilot.click("#adopt")
        await searched(pilot)
        assert _planned(app) == wanted
        first = app.screen.result.options[0]  # type: ignore[attr-defined]
        app.screen.query_one("#advise-options", DataTable).move_cursor(row=0)
        commands = {c.title: c for c in app.get_system_commands(app.screen)}
        titles = [t for t in commands if "adopt" in t.lower() and "order" in t.lower()]
        assert titles
        commands[titles[0]].callback()
        await searched(pilot)
        assert _planned(app) == (first.card, first.cards, first.window_days)


async def test_enter_while_a_search_runs_adopts_nothing() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await _highlight_second(pilot)
        before = _planned(app)
        screen = app.screen
        screen._token += 1  # type: ignore[attr-defined]  # a newer search is under way
        assert not screen.adopt_highlighted()  # type: ignore[attr-defined]
        assert _planned(app) == before


async def test_the_table_takes_the_height_it_is_given() -> None:
    rows = {}
    for size in ((80, 24), (120, 36)):
        app = make_app()
        async with app.run_test(size=size) as pilot:
            await pilot.press("7")
            screen = await searched(pilot)
            await pilot.pause()
            table = screen.query_one("#advise-options", DataTable)
            rows[size] = table.size.height
            assert screen.query_one("#adopt").region.bottom < size[1] - 1
    assert rows[(120, 36)] >= rows[(80, 24)] + 10


async def test_leaving_advise_stops_its_search_and_coming_back_finishes_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import asyncio
    import threading

    import screens.advise as module

    started, released = threading.Event(), threading.Event()
    calls: list[bool] = []

    def held(*args: Any, progress_fn: Any, **kwargs: Any) -> Any:
        calls.append(True)
        if len(calls) == 1:  # the first search waits until the screen was left
            started.set()
            released.wait()
            progress_fn(0, 1)  # raises: the search was cancelled meanwhile
        return advise(*args, progress_fn=progress_fn, **kwargs)

    monkeypatch.setattr(module, "advise", held)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("7")
        await asyncio.to_thread(started.wait)
        screen = app.screen
        await pilot.press("1")
        await pilot.pause()
        released.set()
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.result is None  # stopped, nothing shown
        await pilot.press("7")
        screen = await searched(pilot)
        assert len(calls) == 2 and screen.result is not None and screen.result.options

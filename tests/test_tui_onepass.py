"""An edit that makes the Fit screen's content taller or shorter is laid out in one pass,
and leaves nothing stale: sizes and the scrollbar are what a fresh layout gives."""

from __future__ import annotations

from typing import Any

from textual.screen import Screen
from textual.widgets import Static

from screens.fit import FitScreen
from screens.widgets.gantt import Timeline
from screens.widgets.onepass import OnePassScroll
from tests.test_tui import make_app

SIZE = (100, 32)


def layout_facts(screen: Screen[Any]) -> tuple[object, ...]:
    scroll = screen.query_one("#fit", OnePassScroll)
    bar = scroll.vertical_scrollbar
    timeline = screen.query_one(Timeline)
    return (timeline.size, timeline.region, scroll.virtual_size, scroll.show_vertical_scrollbar,
            bar.window_virtual_size, bar.window_size, screen.query_one("#missing", Static).region)


async def test_a_taller_timeline_takes_one_layout_pass_and_matches_a_fresh_layout() -> None:
    app = make_app()
    passes: list[int] = []
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FitScreen)
        original = screen._refresh_layout

        def counted(*args: Any, **kwargs: Any) -> None:
            passes.append(1)
            original(*args, **kwargs)

        screen._refresh_layout = counted  # type: ignore[method-assign]
        cards = app.workspace.preset.campaign.cards
        for n in (cards + 3, cards):
            passes.clear()
            before = screen.query_one(Timeline).size.height
            app.edit("campaign", cards=n)
            await pilot.pause()
            await pilot.pause()
            timeline = screen.query_one(Timeline)
            assert timeline.size.height == n + 1 != before
            assert len(passes) == 1
            after_edit = layout_facts(screen)
            screen.refresh(layout=True)
            await pilot.pause()
            assert layout_facts(screen) == after_edit


def _paint(grid: dict[tuple[int, int], tuple[str, object]], update: object,
           console: Any) -> None:
    """Apply one compositor update to a record of the terminal's cells, as a terminal
    would: a cursor move, then text (with its style) from there."""
    from rich.cells import cell_len
    from rich.segment import ControlType

    x = y = 0
    for seg in update.__rich_console__(console, console.options):  # type: ignore[attr-defined]
        if seg.control:
            for code in seg.control:
                if code[0] == ControlType.CURSOR_MOVE_TO:
                    x, y = code[1], code[2]
            continue
        if seg.text == "\n":
            continue
        for ch in seg.text:
            grid[(x, y)] = (ch, seg.style)
            x += cell_len(ch)


async def test_the_frame_of_an_edit_shows_the_scrollbar_as_a_fresh_frame_draws_it() -> None:
    app = make_app()
    terminal: dict[tuple[int, int], tuple[str, object]] = {}
    frames: list[object] = []
    display = app._display

    def recorded(screen: Screen[Any], update: Any) -> None:
        if update is not None:
            frames.append(update)
            _paint(terminal, update, app.console)
        display(screen, update)

    app._display = recorded  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        bar = screen.query_one("#fit", OnePassScroll).vertical_scrollbar
        cards = app.workspace.preset.campaign.cards
        for n in (cards + 3, cards):
            thumb = bar.window_virtual_size
            frames.clear()
            app.edit("campaign", cards=n)
            await pilot.pause()
            await pilot.pause()
            assert bar.window_virtual_size != thumb
            assert len(frames) == 1  # the edit, thumb included, in one frame
            fresh: dict[tuple[int, int], tuple[str, object]] = {}
            for widget in screen.walk_children():
                widget.refresh()
            _paint(fresh, screen._compositor.render_update(full=True), app.console)
            assert terminal == fresh
            await pilot.pause()  # the repaint asked for above, before the next edit

"""Switching screens: a screen shown again looks as it did, its keys are those its bindings
give, and every style change made while it was out of sight shows when it comes back.

A screen coming back skips Textual's restyle of every node when nothing that restyle would
pick up changed (`screens.restyle`); each test here compares the styles a
screen shows after coming back with those a full restyle gives it.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, ClassVar

from textual import events
from textual.screen import Screen
from textual.widgets import Input
from textual.widgets._footer import FooterKey

import screens.app as ui
from screens.base import PlannerScreen
from screens.widgets.footer import KeyFooter
from screens.widgets.nav import SCREENS, NavBar
from screens.widgets.status import StatusLine
from tests.test_tui import make_app

SIZE = (80, 24)


class ProbeApp(ui.PlannerApp):
    """The planner with rules that depend on the app's own class and focus."""

    CSS_PATH: ClassVar = [str(Path(ui.__file__).parent / p) for p in ui.PlannerApp.CSS_PATH]
    CSS = """
    App.-probe NavBar { background: red; }
    App:blur StatusLine { color: magenta; }
    """


def probe_app() -> ProbeApp:
    app = make_app()
    return ProbeApp(app.workspace.preset, source="probe", created=app.created)


def rules(screen: Screen[Any]) -> list[tuple[str, str | None, dict[str, object]]]:
    """Every node's styles from the stylesheet, in DOM order."""
    return [(type(n).__name__, n.id, dict(n.styles.base._rules))
            for n in screen.walk_children(with_self=True)]


async def restyled(pilot: Any, screen: Screen[Any]) -> list[tuple[str, str | None,
                                                              dict[str, object]]]:
    """The styles a full restyle gives the screen (the screen keeps them)."""
    pilot.app.stylesheet.update(screen, animate=False)
    await pilot.pause()
    return rules(screen)


async def show(pilot: Any, key: str) -> PlannerScreen:
    await pilot.press(key)
    await pilot.app.workers.wait_for_complete()
    await pilot.pause()
    for field in pilot.app.screen.query(Input):
        field.cursor_blink = False
    await pilot.pause()
    screen = pilot.app.screen
    assert isinstance(screen, PlannerScreen)
    return screen


def keys(screen: Screen[Any]) -> list[tuple[str, str, bool]]:
    """(Key, description, disabled) the footer should show: each shown action once, under
    its first key."""
    first: dict[str, tuple[str, str, bool]] = {}
    for _, b, enabled, _ in screen.active_bindings.values():
        if b.show:
            first.setdefault(b.action, (b.key, b.description, not enabled))
    return list(first.values())


def resumes(monkeypatch: Any) -> list[bool]:
    """Whether Textual restyled every node, per screen shown again from now on."""
    seen: list[bool] = []
    resume = Screen._on_screen_resume

    def recording(self: Screen[Any], event: events.ScreenResume) -> None:
        seen.append(event.refresh_styles)
        resume(self, event)

    monkeypatch.setattr(Screen, "_on_screen_resume", recording)
    return seen


async def test_every_screen_shown_again_looks_as_it_did_with_its_keys(
        monkeypatch: Any) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        first: dict[str, str] = {}
        for key, _, title in [*SCREENS[1:], SCREENS[0]]:
            screen = await show(pilot, key)
            first[title] = app.export_screenshot()
            assert rules(screen) == await restyled(pilot, screen), title
        seen = resumes(monkeypatch)
        for key, _, title in [*SCREENS[1:], SCREENS[0]]:
            screen = await show(pilot, key)
            assert app.export_screenshot() == first[title], title
            footer = screen.query_one(KeyFooter)
            drawn = [(k.key, k.description, k.disabled) for k in footer.query(FooterKey)]
            assert drawn == [*keys(screen), ("ctrl+p", "palette", False)], title
            assert rules(screen) == await restyled(pilot, screen), title
        # Nothing the styles depend on changed: no screen was restyled whole.
        assert seen == [False] * len(SCREENS)


async def test_the_keys_follow_the_focus_on_a_screen_shown_again() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await show(pilot, "7")
        await show(pilot, "1")
        screen = await show(pilot, "7")
        footer = screen.query_one(KeyFooter)
        before = [k.description for k in footer.query(FooterKey)]
        screen.query_one(Input).focus()
        await pilot.pause()
        await pilot.pause()
        after = [k.description for k in footer.query(FooterKey)]
        assert after == [*(description for _, description, _ in keys(screen)), "palette"]
        assert after != before, (before, after)


async def test_a_theme_changed_while_a_screen_is_out_of_sight_shows_on_it(
        monkeypatch: Any) -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        fit = await show(pilot, "3")
        dark = fit.query_one(NavBar).styles.background
        await show(pilot, "1")
        app.theme = "textual-light"
        await pilot.pause()
        seen = resumes(monkeypatch)
        fit = await show(pilot, "3")
        assert fit.query_one(NavBar).styles.background != dark
        assert rules(fit) == await restyled(pilot, fit)
        assert seen == [True]
        # A theme changed just before a screen's first showing, the change still pending.
        app.theme = "textual-dark"
        measure = await show(pilot, "4")
        assert measure.query_one(NavBar).styles.background == dark
        assert rules(measure) == await restyled(pilot, measure)


async def test_a_class_changed_on_a_screen_out_of_sight_shows_when_it_comes_back() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        fit = await show(pilot, "3")
        status = fit.query_one(StatusLine)
        plain = status.styles.background
        await show(pilot, "1")
        status.add_class("-error")
        await show(pilot, "3")
        assert status.styles.background != plain
        assert rules(fit) == await restyled(pilot, fit)


async def test_the_apps_class_and_focus_changed_elsewhere_show_when_a_screen_comes_back(
        monkeypatch: Any) -> None:
    app = probe_app()
    async with app.run_test(size=SIZE) as pilot:
        fit = await show(pilot, "3")
        plain = fit.query_one(NavBar).styles.background
        await show(pilot, "1")
        app.add_class("-probe")
        await pilot.pause()
        seen = resumes(monkeypatch)
        fit = await show(pilot, "3")
        assert fit.query_one(NavBar).styles.background != plain
        assert rules(fit) == await restyled(pilot, fit)

        await show(pilot, "1")
        app.app_focus = False
        await pilot.pause()
        app.action_goto("fit")  # a key press would give the app its focus back
        await pilot.pause()
        assert not app.app_focus and app.screen is fit
        assert fit.query_one(StatusLine).styles.color.hex.lower() == "#ff00ff"
        assert rules(fit) == await restyled(pilot, fit)
        # Campaign, shown when both changed, was not restyled again when it came back.
        assert seen == [True, False, True]


async def test_a_screen_is_drawn_once_when_first_shown_and_once_per_edit(
        monkeypatch: Any) -> None:
    drawn: Counter[str] = Counter()
    redraw = PlannerScreen._redraw

    def counting(self: PlannerScreen, ws: Any) -> None:
        drawn[self.MODE] += 1
        redraw(self, ws)

    monkeypatch.setattr(PlannerScreen, "_redraw", counting)
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        for key, _, _ in [*SCREENS[1:], SCREENS[0]]:
            await show(pilot, key)
        assert drawn == dict.fromkeys((mode for _, mode, _ in SCREENS), 1)
        await pilot.press("m")  # 30 days: an edit on the screen shown
        await pilot.pause()
        assert drawn["campaign"] == 2 and drawn["compare"] == 1
        await show(pilot, "5")  # edited while out of sight: drawn once on its return
        app.edit("campaign", cards=3)
        await pilot.pause()
        assert drawn["compare"] == 3 and drawn["campaign"] == 2

"""A screen shown again is restyled only when something its styles depend on changed.

Textual 8 restyles every node of a screen each time `App.switch_mode` shows it again (it
posts `ScreenResume(refresh_styles=True)`), and reparses and reapplies the whole app
stylesheet when the screen's stylesheet counter is behind the app's, which it always is on
a screen's first and second showings (a screen shown for the first time is not mounted yet
when Textual records the counter). Restyling a node drops its cached lines, so on the
planner's screens of tables this was most of a screen switch.

Between two showings, Textual itself restyles a hidden screen's nodes whose classes,
focus or place in the DOM change. What reaches the shown screens only is the stylesheet
and the theme (the app counts their changes), the app's own classes and its
pseudo-classes (focus, dark or light, ...): those are compared here, and Textual's restyle
runs when any of them changed since the screen was last shown.

This is the one module of the planner that reads and writes Textual's private state (the
stylesheet counter `_css_update_count`), kept for what it is measured to buy on a 1,000-run
matrix (`benchmarks/bench_tui.py`, side by side): about 0.3 s of CPU at the first frame,
and 0.1-0.3 s on each screen's first visit (Fit, Workload, Compare). The public inputs
alone (theme, classes, pseudo-classes) would keep the quick return to a screen, not those.
Textual's major version is pinned in pyproject.toml; `tests/test_tui_switch.py` compares
every screen's styles with a full restyle's.
"""

from __future__ import annotations

import contextlib

from textual import events
from textual.app import App
from textual.screen import Screen


def style_inputs(app: App[object]) -> tuple[object, ...]:
    """What a screen's styles depend on that Textual applies to the shown screens alone."""
    return (app._css_update_count, app.classes, app.pseudo_classes)


class RestyledOnChange(Screen[None]):
    """A screen that skips Textual's full restyle when it is shown again unchanged.

    Textual calls each class's handler in turn, subclasses first, so these run before
    Screen's own handler of the same event, which reads `refresh_styles`.
    """

    def __init__(self) -> None:
        super().__init__()
        self._styled_for: tuple[object, ...] | None = None
        # A screen made for its first showing has missed no change of the stylesheet:
        # its widgets are styled as they mount, with the stylesheet as it is, so Textual
        # need not parse and apply it again to show it (it did, on the first showing and
        # again on the second), nor restyle every node once mounted. Not so the app's
        # first screen, made before the app has read its stylesheet: that one is
        # recorded once mounted.
        self._made_at = -1
        # Textual raises its NoActiveAppError, a RuntimeError, where no app runs yet.
        with contextlib.suppress(RuntimeError):
            self._made_at = self.app._css_update_count
            if self.app.screen_stack:
                self._css_update_count = self._made_at
                self._styled_for = style_inputs(self.app)

    def on_mount(self) -> None:
        if self.is_current and self._made_at == self.app._css_update_count:
            self._css_update_count = self._made_at

    def on_screen_suspend(self) -> None:
        self._styled_for = style_inputs(self.app)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        if self._styled_for == style_inputs(self.app):
            event.refresh_styles = False

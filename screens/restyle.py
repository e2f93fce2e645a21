"""A screen shown again is restyled only when something its styles depend on changed.

Textual 8 restyles every node of a screen each time `App.switch_mode` shows it again (it
posts `ScreenResume(refresh_styles=True)`). Restyling a node drops its cached lines, so on
the planner's screens of tables this was most of a screen switch.

Between two showings, Textual itself restyles a hidden screen's nodes whose classes,
focus or place in the DOM change. What reaches the shown screens only is the theme, the
app's own classes and its pseudo-classes (focus, dark or light, ...): those are compared
here, through Textual's public attributes, and Textual's restyle runs when any of them
changed since the screen was last shown.
"""

from __future__ import annotations

from textual import events
from textual.app import App
from textual.screen import Screen


def style_inputs(app: App[object]) -> tuple[object, ...]:
    """What a screen's styles depend on that Textual applies to the shown screens alone."""
    return (app.theme, app.ansi_color, app.classes, app.pseudo_classes)


class RestyledOnChange(Screen[None]):
    """A screen that skips Textual's full restyle when it is shown again unchanged.

    Textual calls each class's handler in turn, subclasses first, so these run before
    Screen's own handler of the same event, which reads `refresh_styles`.
    """

    def __init__(self) -> None:
        super().__init__()
        self._styled_for: tuple[object, ...] | None = None

    def on_screen_suspend(self) -> None:
        self._styled_for = style_inputs(self.app)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        if self._styled_for == style_inputs(self.app):
            event.refresh_styles = False

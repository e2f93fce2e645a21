"""The status line under the navigation: the plan's headline, or what is wrong."""

from __future__ import annotations

from rich.cells import cell_len
from textual import events
from textual.widgets import Static

from screens.state import Workspace
from screens.text import headline

SEP = " · "
KEEP = 3
"""Parts of the headline always shown (name, window × cards, what fits); the rest are
dropped from the end when the line is too narrow, rather than wrapped."""


def fitted(text: str, width: int) -> str:
    """`text`'s ` · `-separated parts, as many as fit in `width` cells (at least `KEEP`)."""
    parts = text.split(SEP)
    while len(parts) > KEEP and cell_len(SEP.join(parts)) > width:
        parts.pop()
    return SEP.join(parts)


class StatusLine(Static):
    """Headline of the plan shown, or the error that keeps the last good plan on screen."""

    DEFAULT_CSS = """
    StatusLine { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    StatusLine.-error { background: $error 30%; color: $text; }
    """

    def __init__(self) -> None:
        super().__init__("", id="status", markup=False)
        self._headline = ""
        self._shown = ""
        """The headline on screen; empty while an error is shown."""
        self._one_line = True

    def show(self, ws: Workspace) -> None:
        """Show the workspace's headline or its error."""
        if ws.error is not None:
            self.set_class(True, "-error")
            self._headline = ""
            e = ws.error
            # The field names the place; the preset's file is the one being edited.
            where = f"{e.field}: {e.message}" if e.field else str(e)
            self._shown = ""
            self.update(f"✗ {where}  — showing the last good plan")
        else:
            self.set_class(False, "-error")
            self._headline = headline(ws.plan)
            self._fit()

    def on_resize(self, event: events.Resize) -> None:
        if self._headline:
            self._fit()

    def _fit(self) -> None:
        width = self.content_size.width or (self.app.size.width - 2)
        text = fitted(self._headline, width)
        if text == self._shown:
            return
        # A headline that fits is one line, as the line before it (unless that was an
        # error): a repaint will do, without laying the screen out again.
        one_line = cell_len(text) <= width
        self.update(text, layout=not (self._shown and one_line and self._one_line))
        self._shown, self._one_line = text, one_line

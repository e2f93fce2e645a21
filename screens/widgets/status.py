"""The status line under the navigation: the plan's headline, or what is wrong."""

from __future__ import annotations

from textual.widgets import Static

from screens.state import Workspace
from screens.text import headline


class StatusLine(Static):
    """Headline of the plan shown, or the error that keeps the last good plan on screen."""

    DEFAULT_CSS = """
    StatusLine { height: auto; max-height: 3; padding: 0 1; background: $boost; }
    StatusLine.-error { background: $error 30%; color: $text; }
    """

    def __init__(self) -> None:
        super().__init__("", id="status", markup=False)

    def show(self, ws: Workspace) -> None:
        """Show the workspace's headline or its error."""
        if ws.error is not None:
            self.set_class(True, "-error")
            e = ws.error
            # The field names the place; the preset's file is the one being edited.
            where = f"{e.field}: {e.message}" if e.field else str(e)
            self.update(f"✗ {where}  — showing the last good plan")
        else:
            self.set_class(False, "-error")
            self.update(headline(ws.plan))

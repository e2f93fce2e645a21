"""What every screen shares: navigation, the status line, the footer, and redrawing when
the workspace changes."""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding

from screens.restyle import RestyledOnChange
from screens.state import Workspace
from screens.widgets.footer import KeyFooter
from screens.widgets.form import FieldRow
from screens.widgets.nav import NavBar
from screens.widgets.status import StatusLine

if TYPE_CHECKING:
    from screens.app import PlannerApp


class PlannerScreen(RestyledOnChange):
    """A screen of the planner: shows the workspace, edits it through the app."""

    MODE: ClassVar[str] = ""
    BINDINGS: ClassVar = [Binding("escape", "leave_field", "Leave field", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self._seen = -1

    @property
    def planner(self) -> PlannerApp:
        """The app, typed."""
        return self.app  # type: ignore[return-value]

    def compose(self) -> ComposeResult:
        yield NavBar(self.MODE)
        yield StatusLine()
        yield from self.body()
        yield KeyFooter()

    def body(self) -> ComposeResult:
        """The screen's own widgets."""
        yield from ()

    def on_mount(self) -> None:
        # Textual calls every class's on_mount in turn: a screen's own handler must not
        # call this one again (it would redraw twice and hear every edit twice).
        self.planner.changed.subscribe(self, self._changed)
        self._redraw(self.planner.workspace)

    def on_screen_resume(self, event: events.ScreenResume) -> None:
        if self._seen != self.planner.workspace.revision:
            self._redraw(self.planner.workspace)

    def _changed(self, ws: Workspace) -> None:
        # Screens out of sight redraw when they come back, so an edit costs one redraw.
        if self.is_current:
            self._redraw(ws)

    def _redraw(self, ws: Workspace) -> None:
        if self.planner.undone > self._seen:
            # An undo since this screen last drew: the fields show the preset it brought
            # back, the one being typed in too.
            for row in self.query(FieldRow):
                row.release()
        self._seen = ws.revision
        self.query_one(StatusLine).show(ws)
        self.show(ws)

    def show(self, ws: Workspace) -> None:
        """Bring the screen's widgets in line with the workspace."""

    def on_field_row_edited(self, message: FieldRow.Edited) -> None:
        self.edited(message.path, message.value)

    def on_field_row_invalid(self, message: FieldRow.Invalid) -> None:
        self.invalid(message.path, message.message)

    def edited(self, path: str, value: object) -> None:
        """A form row holds a new value: edit the preset field at `path`."""
        section, _, name = path.rpartition(".")
        self.planner.edit(section, **{name: value})

    def invalid(self, path: str, message: str) -> None:
        """A form row holds text that does not parse: say why."""
        self.planner.refuse(message, field=path)

    def action_leave_field(self) -> None:
        """Take focus off the field, so single-key bindings work again."""
        self.set_focus(None)

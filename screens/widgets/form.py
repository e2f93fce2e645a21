"""Form rows that edit one preset field: a label and a one-line input or choice.

A row only parses what was typed; the screen turns its `Edited` message into a new preset
and the app decides whether it can be planned.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pydantic import BaseModel
from textual import events
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import Input, Label, Select, TextArea

from planner.spec.base import field_doc


def help_of(model: type[BaseModel], name: str) -> str:
    """The field's docstring, used as the row's tooltip."""
    return field_doc(model, name)


def _dom_id(path: str) -> str:
    return "f-" + path.replace(".", "-").replace("_", "-")


class FieldRow(Horizontal):
    """`label [ value ]`, editing the preset field at dotted `path`."""

    DEFAULT_CSS = """
    FieldRow { height: 1; margin: 0 0 0 0; }
    FieldRow > Label { width: 24; color: $text-muted; }
    FieldRow > Input { width: 1fr; max-width: 48; }
    FieldRow > Select { width: 1fr; max-width: 48; }
    FieldRow.-invalid > Label { color: $error; }
    """

    class Edited(Message):
        """The row holds a value that parses."""

        def __init__(self, row: FieldRow, path: str, value: Any) -> None:
            super().__init__()
            self.row = row
            self.path = path
            self.value = value

    class Invalid(Message):
        """The row holds text that does not parse."""

        def __init__(self, row: FieldRow, path: str, message: str) -> None:
            super().__init__()
            self.row = row
            self.path = path
            self.message = message

    def __init__(self, label: str, path: str, parse: Callable[[str], Any], value: str = "",
                 *, tooltip: str = "", placeholder: str = "", advance: bool = True) -> None:
        """`advance`: Enter moves the focus on to the next widget; without it the focus
        stays, for a field whose Enter acts (writes, adopts) and is typed in again."""
        super().__init__(id=_dom_id(path))
        self.advance = advance
        self.label = label
        self.path = path
        self.parse = parse
        self._value = value
        self._placeholder = placeholder
        self._released = False
        if tooltip:
            self.tooltip = tooltip

    def compose(self) -> ComposeResult:
        yield Label(self.label)
        yield Input(self._value, placeholder=self._placeholder, compact=True,
                    select_on_focus=True)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        # Text set by the program (mount, sync) is not an edit.
        if event.value == self._value:
            return
        self._value = event.value
        try:
            value = self.parse(event.value)
        except ValueError as exc:
            self.set_class(True, "-invalid")
            self.post_message(self.Invalid(self, self.path, str(exc)))
            return
        self.set_class(False, "-invalid")
        self.post_message(self.Edited(self, self.path, value))

    class Submitted(Message):
        """Enter was pressed in the row (after its value was read)."""

        def __init__(self, row: FieldRow, path: str) -> None:
            super().__init__()
            self.row = row
            self.path = path

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.post_message(self.Submitted(self, self.path))
        if self.advance:
            self.screen.focus_next()

    def on_input_blurred(self, event: Input.Blurred) -> None:
        # Out of focus, a long value shows its start, not the end typed last.
        event.input.cursor_position = 0

    def release(self) -> None:
        """Let the next `sync` show the preset's value even while the field has the focus:
        an undo takes back what was typed here too."""
        self._released = True

    def sync(self, text: str) -> None:
        """Show the preset's value, unless the user is typing here (and no undo since)."""
        field = self.query_one(Input)
        released, self._released = self._released, False
        if field.value == text or (field.has_focus and not released):
            return
        self._value = text
        with field.prevent(Input.Changed):
            field.value = text
        # Typing goes on after the value shown; out of focus, its start shows.
        field.cursor_position = len(text) if field.has_focus else 0
        self.set_class(False, "-invalid")


class ChoiceRow(FieldRow):
    """`label [ choice ▾ ]`, for fields with a fixed set of values."""

    def __init__(self, label: str, path: str, choices: Iterable[str], value: str,
                 *, tooltip: str = "") -> None:
        super().__init__(label, path, str, value, tooltip=tooltip)
        self.choices = list(choices)

    def compose(self) -> ComposeResult:
        yield Label(self.label)
        yield Select([(c, c) for c in self.choices], value=self._value, allow_blank=False,
                     compact=True)

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is Select.NULL or event.value == self._value:
            return
        self._value = str(event.value)
        self.post_message(self.Edited(self, self.path, event.value))

    def sync(self, text: str) -> None:
        """Show the preset's value."""
        field = self.query_one(Select)
        if field.value != text and text in self.choices:
            self._value = text
            with field.prevent(Select.Changed):
                field.value = text


class _Wrapping(TextArea):
    """A text area where Enter moves on, as in a one-line field, instead of adding a line."""

    def on_key(self, event: events.Key) -> None:
        # Runs before the text area's own key handling, which `prevent_default` skips.
        if event.key == "enter":
            event.stop()
            event.prevent_default()
            self.screen.focus_next()


class WrapRow(FieldRow):
    """`label [ value ]` whose value wraps onto up to three lines instead of scrolling out
    of sight (a baseline's factors); Enter moves on, as in a one-line field."""

    DEFAULT_CSS = """
    WrapRow { height: auto; }
    WrapRow > TextArea { width: 1fr; height: auto; max-height: 3; }
    """

    def compose(self) -> ComposeResult:
        yield Label(self.label)
        yield _Wrapping(self._value, soft_wrap=True, compact=True, tab_behavior="focus",
                        show_line_numbers=False)

    def on_text_area_changed(self, event: TextArea.Changed) -> None:
        event.stop()
        text = event.text_area.text
        if text == self._value:
            return
        self._value = text
        try:
            value = self.parse(text)
        except ValueError as exc:
            self.set_class(True, "-invalid")
            self.post_message(self.Invalid(self, self.path, str(exc)))
            return
        self.set_class(False, "-invalid")
        self.post_message(self.Edited(self, self.path, value))

    def sync(self, text: str) -> None:
        """Show the preset's value, unless the user is typing here."""
        field = self.query_one(TextArea)
        if field.has_focus or field.text == text:
            return
        self._value = text
        with field.prevent(TextArea.Changed):
            field.load_text(text)
        self.set_class(False, "-invalid")

"""What a screen cuts: the widgets on a screen whose text is wider than the room it is
given (a table that needs a horizontal scroll, a one-line label or field cut short, a
preview line past the edge, a drawn line longer than its block)."""

from __future__ import annotations

from typing import Any

from rich.cells import cell_len
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Button, DataTable, Footer, Input, Label, TextArea

from screens.widgets.lines import Lines
from screens.widgets.nav import NavBar


def _text(widget: Widget) -> str:
    return str(widget.render())


def cut(screen: Screen[Any]) -> list[str]:
    """One line per widget in sight that cuts its text: the widget and the text."""
    out: list[str] = _footer_cut(screen)
    for widget in screen.query("*"):
        if not widget.display or not widget.region.width or not widget.is_on_screen:
            continue
        room = widget.content_region.width
        name = f"{type(widget).__name__}#{widget.id or ''}"
        if isinstance(widget, DataTable):
            if widget.virtual_size.width > widget.scrollable_content_region.width:
                out.append(f"{name}: {widget.virtual_size.width} columns of content in "
                           f"{widget.scrollable_content_region.width}")
        elif isinstance(widget, Input):
            if not widget.has_focus and cell_len(widget.value) > room:
                out.append(f"{name}: {widget.value!r} in {room} columns")
        elif isinstance(widget, TextArea):
            if not widget.soft_wrap and max(
                    (cell_len(line) for line in widget.text.splitlines()), default=0) > room:
                out.append(f"{name}: lines wider than {room} columns, not wrapped")
        elif isinstance(widget, Lines):
            for line in widget.lines():
                if cell_len(line.plain.rstrip()) > widget.size.width:
                    out.append(f"{name}: {line.plain.rstrip()!r} in {widget.size.width}")
        elif isinstance(widget, (Label, Button, NavBar)) and widget.size.height == 1:
            text = _text(widget).strip()
            if "\n" not in text and cell_len(text) > room:
                out.append(f"{name}: {text!r} in {room} columns")
    return out


def _footer_cut(screen: Screen[Any]) -> list[str]:
    """The key bar's keys that end past its edge, or under the palette key docked at its
    right: Textual's footer scrolls them out of sight rather than wrapping them."""
    out: list[str] = []
    for footer in screen.query(Footer):
        if not footer.display or not footer.region.width:
            continue
        right = footer.region.right
        for key in footer.query("FooterKey.-command-palette"):
            right = min(right, key.region.x)
        for key in footer.query("FooterKey"):
            if not key.has_class("-command-palette") and key.region.right > right:
                out.append(f"Footer: key {_text(key).strip()!r} ends at column "
                           f"{key.region.right}, past {right}")
    return out

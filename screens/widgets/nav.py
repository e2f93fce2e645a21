"""The one-line navigation bar: every screen with its key, clickable."""

from __future__ import annotations

from textual.content import Content
from textual.widgets import Static

SCREENS: tuple[tuple[str, str, str], ...] = (
    ("1", "campaign", "Campaign"),
    ("2", "workload", "Workload"),
    ("3", "fit", "Fit"),
    ("4", "measure", "Measure"),
    ("5", "compare", "Compare"),
    ("6", "export", "Export"),
)
"""(key, mode, title) of each screen, in the order they are visited."""


class NavBar(Static):
    """Screens by key; the current one highlighted; a click switches."""

    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $text-muted; link-style: none;
             link-color: $text; link-background-hover: $accent 40%; }
    """

    def __init__(self, current: str) -> None:
        parts = []
        for key, mode, title in SCREENS:
            style = "bold reverse $accent" if mode == current else ""
            parts.append(Content.from_markup(
                f"[{style} @click=app.goto('{mode}')] {key} {title} [/]"))
        parts.append(Content.from_markup("[@click=app.help] F1 Help [/]"))
        super().__init__(Content(" ").join(parts), id="nav")

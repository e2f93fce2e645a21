"""The one-line navigation bar: every screen with its key, clickable."""

from __future__ import annotations

from rich.cells import cell_len
from textual.content import Content
from textual.widget import Widget

SCREENS: tuple[tuple[str, str, str], ...] = (
    ("1", "campaign", "Campaign"),
    ("2", "workload", "Workload"),
    ("3", "fit", "Fit"),
    ("4", "measure", "Measure"),
    ("5", "compare", "Compare"),
    ("6", "export", "Export"),
    ("7", "advise", "Advise"),
)
"""(key, mode, title) of each screen, in the order they are visited."""

HELP = "F1 Help"

LAYOUTS = ((" ", 3, 0), (" ", 1, 0), ("", 2, 0), ("", 1, 0), ("", 1, 4))
"""(padding, gap, title cut) of the bar, widest first: the first that fits is drawn."""


class NavBar(Widget):
    """Screens by key; the current one highlighted; a click switches. Every screen keeps
    its place on the bar at any width: the spacing shrinks first, then the titles."""

    DEFAULT_CSS = """
    NavBar { height: 1; background: $panel; color: $text-muted; link-style: none;
             link-color: $text; link-background-hover: $accent 40%; }
    """

    def __init__(self, current: str) -> None:
        super().__init__(id="nav")
        self.current = current

    def render(self) -> Content:
        width = self.size.width or 80
        for pad, gap, cut in LAYOUTS:
            parts = self._parts(pad, cut)
            if sum(cell_len(t) for t, _, _ in parts) + gap * (len(parts) - 1) <= width:
                break
        pieces = []
        for text, action, mode in parts:
            style = "bold reverse $accent" if mode == self.current else ""
            pieces.append(Content.from_markup(f"[{style} @click={action}]$text[/]", text=text))
        return Content(" " * gap).join(pieces)

    @staticmethod
    def _parts(pad: str, cut: int) -> list[tuple[str, str, str]]:
        parts = [(f"{pad}{key} {title[:cut] if cut else title}{pad}", f"app.goto('{mode}')",
                  mode) for key, mode, title in SCREENS]
        parts.append((f"{pad}{HELP}{pad}", "app.help", "help"))
        return parts

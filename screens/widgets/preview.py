"""A read-only preview of a file to be written: its first lines, soft-wrapped.

Textual's TextArea wraps every line of its document each time the text is loaded and each
time its width changes; a 1,000-run plan.toml is some 28,000 lines, and showing it whole
cost a second or more. The preview shows the first `SHOWN` lines and says how many more
the file holds: the file itself is written whole.
"""

from __future__ import annotations

from textual.widgets import TextArea

SHOWN = 400
"""Lines of a file shown; the rest are counted in a last line."""


def excerpt(text: str, shown: int = SHOWN) -> str:
    """The first `shown` lines of `text`, and a last line counting those left out."""
    lines = text.split("\n", shown)
    more = len(lines.pop().splitlines()) if len(lines) > shown else 0
    if not more:
        return text
    return "\n".join(lines) + f"\n… {more:,} more line{'s' if more != 1 else ''} in the file"


class Preview(TextArea):
    """A read-only, soft-wrapped TextArea showing the start of a file's text."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", read_only=True, soft_wrap=True, show_line_numbers=False, id=id)
        self._loaded: str | None = None

    def show_text(self, text: str) -> None:
        """Show the start of `text` (nothing to do when it is the text shown)."""
        if text != self._loaded:
            self._loaded = text
            self.load_text(excerpt(text))

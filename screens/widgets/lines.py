"""A block of pre-drawn text lines rendered one line at a time.

Textual asks such a widget only for the lines on screen, so a 100-row table or a
64-card timeline costs what is visible, not what exists.
"""

from __future__ import annotations

from collections.abc import Callable

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual.strip import Strip

from planner.planning.plan import Plan
from screens.widgets.onepass import OnePass

Draw = Callable[[Plan, int], list[Text]]
Count = Callable[[Plan, int], int]


class Lines(OnePass):
    """Lines drawn from a plan by `draw(plan, width)`, redrawn on resize.

    With `count(plan, width)` (how many lines `draw` makes), the lines are drawn only when
    first asked for: a widget scrolled out of sight costs nothing on an edit."""

    DEFAULT_CSS = """
    Lines { height: auto; }
    """

    def __init__(self, draw: Draw, *, count: Count | None = None,
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self._draw = draw
        self._count = count
        self.plan: Plan | None = None
        self._lines: list[Text] = []
        self._strips: dict[int, Strip] = {}
        self._width = -1
        self._style = Style()

    def show(self, plan: Plan) -> None:
        """Draw this plan."""
        self.plan = plan
        self._strips.clear()
        width = self.size.width or 80
        if self._count is not None:
            self._lines, self._width = [], -1  # drawn by the first render_line
            height = max(1, self._count(plan, width))
        else:
            self._lines, self._width = self._draw(plan, width), self.size.width
            height = max(1, len(self._lines))
        # A reflow of the whole screen only when the height changes; else a repaint.
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
            self.refresh(layout=True)
        else:
            self.refresh()

    def _fit_height(self) -> None:
        height = max(1, len(self._lines))
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
            self.refresh(layout=True)

    def lines(self) -> list[Text]:
        """The lines as drawn (tests, snapshots of text)."""
        if self.plan is not None and self._width != self.size.width:
            self._lines = self._draw(self.plan, self.size.width or 80)
            self._width = self.size.width
        return list(self._lines)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.plan is not None and width != self._width:
            self._lines = self._draw(self.plan, width)
            self._width = width
            self._strips.clear()
            if self.styles.height is not None and self.styles.height.value != max(
                    1, len(self._lines)):
                # Drawn at its real width, the block has another number of lines (a legend
                # that wraps): take that height once this frame is done.
                self.call_later(self._fit_height)
        if not self._strips:
            # Looking the style up walks the ancestors: once per drawing, not per line.
            self._style = self.rich_style
        style = self._style
        if y >= len(self._lines):
            return Strip.blank(width, style)
        strip = self._strips.get(y)
        if strip is None:
            text = self._lines[y]
            console = self.app.console
            # Text.render leaves out the text's own base style.
            segments = Segment.apply_style(text.render(console), console.get_style(text.style)
                                           if text.style else None)
            strip = Strip(list(segments)).apply_style(style)
            self._strips[y] = strip
        return strip.crop_extend(0, width, style)

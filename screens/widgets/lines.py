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
from textual.widget import Widget

from planner.planfile.plan import Plan

Draw = Callable[[Plan, int], list[Text]]
Count = Callable[[Plan, int], int]
Line = Callable[[int], Text]
Prepare = Callable[[Plan, int], tuple[int, Line]]
"""What a block needs to draw any one line: (how many lines, the drawer of line y)."""


class Lines(Widget):
    """Lines drawn from a plan by `draw(plan, width)`, redrawn on resize.

    With `count(plan, width)` (how many lines `draw` makes), the lines are drawn only when
    first asked for: a widget scrolled out of sight costs nothing on an edit. With
    `prepare(plan, width)` (the number of lines and a drawer of any one of them), only the
    lines asked for are drawn: a 100-row table costs the rows on screen."""

    DEFAULT_CSS = """
    Lines { height: auto; }
    """

    def __init__(self, draw: Draw, *, count: Count | None = None,
                 prepare: Prepare | None = None, id: str | None = None) -> None:
        super().__init__(id=id)
        self._draw = draw
        self._count = count
        self._prepare = prepare
        self.plan: Plan | None = None
        self._n = 0
        self._line: Line = self._blank
        self._texts: dict[int, Text] = {}
        self._strips: dict[int, Strip] = {}
        self._width = -1
        self._style = Style()

    @staticmethod
    def _blank(y: int) -> Text:
        return Text()

    def _ready(self, plan: Plan, width: int) -> None:
        """Make lines of `plan` drawable at `width`: all drawn now, or each when asked."""
        self._texts.clear()
        if self._prepare is not None:
            self._n, self._line = self._prepare(plan, width)
        else:
            lines = self._draw(plan, width)
            self._n, self._line = len(lines), lines.__getitem__

    def show(self, plan: Plan) -> None:
        """Draw this plan."""
        self.plan = plan
        self._strips.clear()
        width = self.size.width or 80
        if self._count is not None:
            self._n, self._width = 0, -1  # drawn by the first render_line
            height = max(1, self._count(plan, width))
        else:
            self._ready(plan, width)
            self._width = self.size.width
            height = max(1, self._n)
        # A reflow of the whole screen only when the height changes; else a repaint.
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
            self.refresh(layout=True)
        else:
            self.refresh()

    def _fit_height(self) -> None:
        height = max(1, self._n)
        if self.styles.height is None or self.styles.height.value != height:
            self.styles.height = height
            self.refresh(layout=True)

    def _text(self, y: int) -> Text:
        text = self._texts.get(y)
        if text is None:
            text = self._texts[y] = self._line(y)
        return text

    def lines(self) -> list[Text]:
        """The lines as drawn (tests, snapshots of text)."""
        if self.plan is not None and self._width != self.size.width:
            self._ready(self.plan, self.size.width or 80)
            self._width = self.size.width
        return [self._text(y) for y in range(self._n)]

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self.plan is not None and width != self._width:
            self._ready(self.plan, width)
            self._width = width
            self._strips.clear()
            if self.styles.height is not None and self.styles.height.value != max(
                    1, self._n):
                # Drawn at its real width, the block has another number of lines (a legend
                # that wraps): take that height once this frame is done.
                self.call_later(self._fit_height)
        if not self._strips:
            # Looking the style up walks the ancestors: once per drawing, not per line.
            self._style = self.rich_style
        style = self._style
        if y >= self._n:
            return Strip.blank(width, style)
        strip = self._strips.get(y)
        if strip is None:
            text = self._text(y)
            console = self.app.console
            # Text.render leaves out the text's own base style.
            segments = Segment.apply_style(text.render(console), console.get_style(text.style)
                                           if text.style else None)
            strip = Strip(list(segments)).apply_style(style)
            self._strips[y] = strip
        return strip.crop_extend(0, width, style)

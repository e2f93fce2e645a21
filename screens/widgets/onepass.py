"""Widgets whose change of size costs one layout pass, not two.

Textual stores each widget's virtual size as a reactive that asks for a layout of the
whole screen when it changes, and it sets that value during the layout itself. So when an
edit makes a block a line taller (one more card on the timeline), the screen is laid out,
drawn, laid out again a frame later (about 17 ms at 60 fps) and drawn again, and the
second pass changes nothing these widgets show: a block of drawn lines does not use its
virtual size, and a scroll container that keeps its scrollbar moves the thumb while the
first pass sets its size (`_scroll_update`). Where the scrollbar has to appear or go, the
second pass is what places it, so the container keeps it then.

The thumb moved in that pass also asks for a repaint of its own, a frame later (about
17 ms at 60 fps), which draws again what the frame composed right after the pass already
shows: the scroll container hands the thumb's region to that frame (in case it was not in
it) and drops the extra repaint, so an edit is shown in one frame, thumb included.
"""

from __future__ import annotations

from textual.containers import VerticalScroll
from textual.geometry import Size
from textual.widget import Widget


class OnePass(Widget):
    """A widget that records a new virtual size without asking for another layout."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        return super()._size_updated(size, virtual_size, container_size, layout=False)


class OnePassScroll(VerticalScroll):
    """A VerticalScroll whose content growing or shrinking is laid out in one pass while
    its scrollbar stays."""

    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size,
                      layout: bool = True) -> bool:
        # One line of slack either way: a scrollbar that might come or go gets its pass.
        stays = (self.show_vertical_scrollbar and not self.show_horizontal_scrollbar
                 and virtual_size.height > size.height + 1)
        updated = super()._size_updated(size, virtual_size, container_size,
                                        layout=layout and not stays)
        bar = self.vertical_scrollbar
        if updated and stays and bar._repaint_required:
            # Called while the screen lays itself out, just before it composes the frame:
            # the thumb is drawn in that frame, not again in one of its own.
            self.screen._compositor.update_widgets({bar})
            bar._repaint_required = False
        return updated

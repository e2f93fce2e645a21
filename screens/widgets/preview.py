"""A read-only preview of a file to be written, soft-wrapped, quick to load when long.

Textual's TextArea wraps every line of its document each time the text is loaded and each
time its width changes, running a word-wrap over each line even where the line fits; a
1,000-run plan.toml is some 28,000 lines, and its preview cost a second. Here a line that
cannot need breaking (plain ASCII, no tab, no wider than the room) is passed over: the
wrapping kept is exactly Textual's (`tests/test_tui_preview.py` compares the two).
"""

from __future__ import annotations

from textual._wrap import compute_wrap_offsets
from textual.document._document import Document, Location
from textual.document._document_navigator import DocumentNavigator
from textual.document._wrapped_document import WrappedDocument
from textual.expand_tabs import get_tab_widths
from textual.widgets import TextArea

# Shared by the lines that fit: Textual replaces a line's lists, never changes them.
ONE_SECTION: list[int] = [0]
NO_SECTION: list[int] = []
NO_BREAK: list[int] = []


class QuickWrap(WrappedDocument):
    """Textual's wrapped document, skipping the lines that fit."""

    @property
    def height(self) -> int:
        """The number of lines once wrapped (Textual sums them over every line, and asks
        on every refresh)."""
        return len(self._offset_to_line_info)

    _wrapped_at: tuple[int, int] | None = None
    """(width, tab width) of the wrapping held, while the document is unchanged since."""

    def wrap(self, width: int, tab_width: int | None = None) -> None:
        self._width = width
        if tab_width:
            self._tab_width = tab_width
        tab_size = self._tab_width
        # TextArea wraps again on every resize and scrollbar change, mostly at the width it
        # already has: a 28,000-line plan.toml was wrapped 20 times on the Export screen's
        # first showing.
        if self._wrapped_at == (width, tab_size):
            return
        offsets: list[list[int]] = []
        line_info: list[tuple[int, int]] = []
        line_offsets: list[list[int]] = []
        tab_widths: list[list[int]] = []
        add_offsets, add_info = offsets.append, line_info.append
        add_lines, add_tabs = line_offsets.append, tab_widths.append
        y = 0
        for index, line in enumerate(self.document.lines):
            if "\t" not in line and line.isascii() and (not width or len(line) <= width):
                # What get_tab_widths and compute_wrap_offsets give such a line.
                add_tabs(ONE_SECTION if line else NO_SECTION)
                add_offsets(NO_BREAK)
                add_lines([y])
                add_info((index, 0))
                y += 1
                continue
            sections = get_tab_widths(line, tab_size)
            breaks = (compute_wrap_offsets(line, width, tab_size=tab_size,
                                           precomputed_tab_sections=sections)
                      if width else [])
            add_tabs([w for _, w in sections])
            add_offsets(breaks)
            add_lines(list(range(y, y + len(breaks) + 1)))
            line_info.extend((index, section) for section in range(len(breaks) + 1))
            y += len(breaks) + 1
        self._wrap_offsets = offsets
        self._offset_to_line_info = line_info
        self._line_index_to_offsets = line_offsets
        self._tab_width_cache = tab_widths
        self._wrapped_at = (width, tab_size)

    def wrap_range(self, start: Location, old_end: Location, new_end: Location) -> None:
        """Textual's, after an edit; the next full wrapping is then done again."""
        self._wrapped_at = None
        super().wrap_range(start, old_end, new_end)


class Preview(TextArea):
    """A read-only, soft-wrapped TextArea whose text loads quickly however long it is."""

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", read_only=True, soft_wrap=True, show_line_numbers=False, id=id)
        self._loaded: str | None = None

    def show_text(self, text: str) -> None:
        """Show `text` (nothing to do when it is the text shown)."""
        if text != self._loaded:
            self._loaded = text
            self.load_text(text)

    def _set_document(self, text: str, language: str | None) -> None:
        if language:
            super()._set_document(text, language)
            return
        # TextArea._set_document for plain text, with the quick wrapping.
        self._highlight_query = None
        self.document = Document(text)
        self.wrapped_document = QuickWrap(self.document, tab_width=self.indent_width)
        self.navigator = DocumentNavigator(self.wrapped_document)
        self._build_highlight_map()
        self.move_cursor((0, 0))
        self._rewrap_and_refresh_virtual_size()

"""The Export screen's file preview: wrapped exactly as Textual's TextArea wraps, and the
text loaded again only when it changed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult
from textual.document._document import Document
from textual.document._wrapped_document import WrappedDocument

from planner.planfile.export import plan_toml
from screens import state
from screens.widgets.preview import Preview, QuickWrap
from tests.test_tui import make_app

STATE = ("_wrap_offsets", "_offset_to_line_info", "_line_index_to_offsets",
         "_tab_width_cache", "_width", "_tab_width")
WIDTHS = (0, 1, 3, 8, 40, 113)


def same_wrapping(text: str, width: int, tab: int = 4) -> None:
    doc = Document(text)
    quick, textual = QuickWrap(doc, tab_width=tab), WrappedDocument(doc, tab_width=tab)
    quick.wrap(width, tab)
    textual.wrap(width, tab)
    for name in STATE:
        assert getattr(quick, name) == getattr(textual, name), (name, width)
    assert quick.height == textual.height and quick.lines == textual.lines


def test_a_plan_file_wraps_as_textual_wraps_it() -> None:
    app = make_app()
    plan, _ = state.exports(app.workspace, app.catalog, None)
    text = plan_toml(plan)
    for width in WIDTHS:
        same_wrapping(text, width)


def test_tabs_wide_characters_long_words_and_blank_lines_wrap_as_textual_wraps_them() -> None:
    text = ("\n\tindented\n a\tb\tc \n" + "x" * 130 + "\n日本語のテキスト" * 9 + "\n"
            "trailing spaces   \n\x1b[0m escape\ncafé crème brûlée " * 4 + "\n\n")
    for width in WIDTHS:
        for tab in (1, 4, 8):
            same_wrapping(text, width, tab)


@settings(max_examples=150, deadline=None)
@given(text=st.text(alphabet=" \tab-é日\n", max_size=80),
       width=st.integers(min_value=0, max_value=12))
def test_any_text_wraps_as_textual_wraps_it(text: str, width: int) -> None:
    same_wrapping(text, width)


class One(App[None]):
    def compose(self) -> ComposeResult:
        yield Preview(id="p")


async def test_the_same_text_again_keeps_the_place_and_new_text_starts_at_the_top() -> None:
    app = One()
    async with app.run_test(size=(40, 10)) as pilot:
        preview = app.query_one(Preview)
        long = "\n".join(f"line {i} " + "word " * 12 for i in range(200))
        preview.show_text(long)
        await pilot.pause()
        assert preview.soft_wrap and preview.read_only and preview.virtual_size.height > 200
        preview.scroll_to(y=50, animate=False)
        await pilot.pause()
        preview.show_text(long)
        await pilot.pause()
        assert preview.scroll_y == 50 and preview.text == long
        preview.show_text(long + "\nmore")
        await pilot.pause()
        assert preview.cursor_location == (0, 0) and preview.text.endswith("more")


async def test_the_export_preview_shows_the_files_in_full(tmp_path: Any) -> None:
    app = make_app(out_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        plan, _ = state.exports(app.workspace, app.catalog, None)
        assert app.screen.query_one("#text-plan", Preview).text == plan_toml(plan)


def test_wrapping_is_done_again_only_when_the_width_or_the_text_changed() -> None:
    text = "a short line\n" + "word " * 40 + "\nend"
    doc = Document(text)
    quick = QuickWrap(doc, tab_width=4)
    quick.wrap(20, 4)
    held = quick._offset_to_line_info
    quick.wrap(20, 4)  # TextArea asks again on each resize at the same width
    assert quick._offset_to_line_info is held
    quick.wrap(30, 4)
    assert quick._offset_to_line_info is not held
    same_wrapping(text, 30)
    # An edit rewraps its range; the next full wrapping at the same width is done again.
    result = doc.replace_range((0, 0), (0, 5), "a much longer first line " * 3)
    quick.wrap_range((0, 0), (0, 5), result.end_location)
    wrapped = quick._offset_to_line_info
    quick.wrap(30, 4)
    assert quick._offset_to_line_info is not wrapped
    textual = WrappedDocument(doc, tab_width=4)
    textual.wrap(30, 4)
    assert quick._offset_to_line_info == textual._offset_to_line_info

"""The Export screen's file preview: the start of each file and how many lines more, the
text loaded again only when it changed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from textual.app import App, ComposeResult

from planner.planfile.export import plan_toml
from screens import state
from screens.widgets.preview import SHOWN, Preview, excerpt
from tests.test_tui import make_app


@settings(max_examples=200, deadline=None)
@given(lines=st.lists(st.text(alphabet="ab \t", max_size=5), max_size=12),
       end=st.sampled_from(["", "\n"]), shown=st.integers(1, 6))
def test_an_excerpt_is_the_first_lines_and_a_count_of_the_rest(
        lines: list[str], end: str, shown: int) -> None:
    text = "\n".join(lines) + end
    out = excerpt(text, shown)
    if len(text.splitlines()) <= shown:
        assert out == text
    else:
        head, last = out.rsplit("\n", 1)
        more = len(text.splitlines()) - shown
        assert head.split("\n") == text.split("\n")[:shown]
        assert last == f"… {more:,} more line{'s' if more != 1 else ''} in the file"


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


async def test_the_export_preview_shows_the_start_of_the_plan(tmp_path: Any) -> None:
    app = make_app(out_dir=tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        plan, _ = state.exports(app.workspace, app.catalog, None)
        text = plan_toml(plan)
        shown = app.screen.query_one("#text-plan", Preview).text
        assert shown == excerpt(text)
        assert shown.split("\n")[:SHOWN] == text.split("\n")[:SHOWN]

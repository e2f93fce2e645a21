"""What a newcomer meets first: every screen on the bar, the focus in sight, the window
choice at a glance, the export folder typed in safely, a timeline to zoom and pan."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import Input, RadioButton

from screens.widgets.gantt import Timeline
from screens.widgets.gantt_draw import View, codes, draw, labels
from screens.widgets.nav import SCREENS, NavBar
from tests.test_tui import make_app


@pytest.mark.parametrize("size", [(80, 24), (120, 36)])
async def test_the_bar_names_all_seven_screens(size: tuple[int, int]) -> None:
    app = make_app()
    async with app.run_test(size=size) as pilot:
        bar = str(app.screen.query_one(NavBar).render())
        assert len(bar) <= size[0]
        for key, _, title in SCREENS:
            assert f"{key} {title}" in bar
        assert "7 Advise" in bar and "F1 Help" in bar
        await pilot.click(NavBar, offset=(bar.index("7 Advise") + 2, 0))
        await pilot.pause()
        assert app.current_mode == "advise"


async def test_the_focused_field_and_table_are_marked() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = app.screen
        field = screen.query_one("#f-campaign-cards Input", Input)
        label = screen.query_one("#f-campaign-cards Label")
        before = (field.styles.background, label.styles.color)
        field.focus()
        await pilot.pause()
        assert (field.styles.background, label.styles.color) != before


async def test_only_the_chosen_window_draws_a_dot() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        def dots() -> list[bool]:
            return ["●" in str(b.render()) for b in app.screen.query(RadioButton)]

        assert dots() == [False, True, False, False]  # 7 days
        await pilot.press("m")
        await pilot.pause()
        assert dots() == [False, False, True, False]


async def test_enter_in_the_folder_writes_and_keeps_the_focus(tmp_path: Path,
                                                             monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        field = app.screen.query_one("#f-export-folder Input", Input)
        field.focus()
        await pilot.pause()
        await pilot.press("o", "u", "t")  # the old folder, selected on focus, is replaced
        await pilot.pause()
        # The line under the form names the folder as soon as it is typed.
        assert "into out/" in str(app.screen.query_one("#export-message").render())
        await pilot.press("enter")
        await pilot.pause()
        assert (tmp_path / "out" / "plan.toml").exists()
        assert field.has_focus
        await pilot.press("/", "3", "w")  # text, not the keys of Fit or Write
        await pilot.pause()
        assert app.current_mode == "export" and field.value == "out/3w"
        assert "into out/3w/" in str(app.screen.query_one("#export-message").render())


async def test_a_placeholder_reads_as_a_hint() -> None:
    app = make_app()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("6")
        await pilot.pause()
        email = app.screen.query_one("#f-contact-email Input", Input)
        assert email.value == "" and "@" not in email.placeholder
        assert email.placeholder.startswith("empty")


def _plan_30_days_8_cards() -> Any:
    from planner.campaign import plan_campaign
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset
    from screens import state
    from tests.conftest import CREATED
    from tests.test_tui import FROZEN

    preset, _ = load_preset(str(FROZEN / "ablation-30d.toml"))
    preset = state.edit(preset, "campaign", cards=8)
    return plan_campaign(preset, load_catalog(), created=CREATED)


def test_bars_show_whole_labels_or_their_code_never_a_cut_word() -> None:
    plan = _plan_30_days_8_cards()
    allowed = {text for run in plan.runs
               for text in labels(run, codes(plan).get(run.variant, "?"))}
    for zoom in range(4):
        lines, _ = draw(plan, 80, View(zoom=zoom))
        for line in lines[:-1]:
            for piece in line.plain[5:].split("▏")[1:]:
                word = piece.rstrip(" ░┃›")
                assert word == "" or word in allowed, (zoom, word)


async def test_zoom_and_pan_on_a_30_day_window_of_8_cards() -> None:
    app = make_app("ablation-30d")
    async with app.run_test(size=(80, 24)) as pilot:
        app.edit("campaign", cards=8)
        await pilot.press("3", "t")
        await pilot.pause()
        timeline = app.screen.query_one(Timeline)
        assert timeline.has_focus and len(timeline.lines()) == 9
        window = app.workspace.plan.campaign.window_hours
        whole = timeline.lines()[-1].plain
        assert "30d end" in whole
        await pilot.press("plus", "plus")
        await pilot.pause()
        assert timeline.view.span(window) == window / 4
        assert "30d end" not in timeline.lines()[-1].plain
        start = timeline.view.start_h
        await pilot.press("right_square_bracket")
        await pilot.pause()
        assert timeline.view.start_h == pytest.approx(start + window / 8)
        await pilot.press("left_square_bracket", "left_square_bracket")
        await pilot.pause()
        assert timeline.view.start_h == max(0.0, start - window / 8)
        first = timeline.cursor_run()
        assert first is not None
        await pilot.press("right")
        await pilot.pause()
        run = timeline.cursor_run()
        assert run is not None and run.id != first.id and run.card == first.card
        line = str(app.screen.query_one("#timeline-cursor").render())
        assert run.id in line and f"{run.start_h:.1f}–{run.end_h:.1f}" in line
        await pilot.press("minus", "minus")
        await pilot.pause()
        assert timeline.view.zoom == 0 and "30d end" in timeline.lines()[-1].plain
        legend = str(app.screen.query_one("#timeline-legend").render())
        assert "A=baseline" in legend


def test_reserved_hours_and_the_end_are_drawn_however_narrow() -> None:
    plan = _plan_30_days_8_cards()
    lines, _ = draw(plan, 80)
    for line in lines[:-1]:
        body = line.plain[5:]
        assert body[0] == "░" and body.rstrip().endswith("┃")


@pytest.mark.parametrize("preset", ["ablation-3d", "ablation-7d", "ablation-30d"])
def test_the_time_axis_speaks_one_unit(preset: str) -> None:
    import re

    from planner.campaign import plan_campaign
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    plan = plan_campaign(load_preset(preset)[0], load_catalog())
    window = plan.campaign.window_hours
    for width in (80, 120):
        for zoom in range(4):
            for start in (0.0, 30.0, 48.0, window / 3):
                axis = draw(plan, width, View(zoom, start))[0][-1].plain
                units = set(re.findall(r"\d(?:\.\d+)?([hd])\b", axis))
                assert len(units) == 1, (width, zoom, start, axis)
    # Whole days read as days when every mark is one; a 3-day window at 80 columns,
    # marked every 12 hours, reads in hours throughout (`36h` never beside `2d`).
    assert "7d end" in draw(plan_campaign(load_preset("ablation-7d")[0], load_catalog()),
                            80)[0][-1].plain
    if preset == "ablation-3d":
        axis = draw(plan, 80)[0][-1].plain
        assert "36h" in axis and "72h end" in axis and "d" not in axis.replace("end", "")

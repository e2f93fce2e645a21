"""The terminal UI at the classic 80×24: tables whole, prompts where edits could be lost,
the Export screen's keys, words an embedding campaign understands."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Input, Label

from planner.spec.catalog import load_catalog
from screens.app import PlannerApp
from screens.embedding_form import parse_lengths, show_lengths
from screens.widgets.status import StatusLine, fitted
from tests.test_tui import make_app, status, type_into

SMALL = (80, 24)
WIDE = (120, 36)


def table_width(table: DataTable[Any]) -> int:
    """Cells the table's columns take, padding included."""
    return sum(c.get_render_width(table) for c in table.ordered_columns)


def column(table: DataTable[Any], index: int) -> list[str]:
    return [str(table.get_row_at(r)[index]) for r in range(table.row_count)]


async def _two_factor_variant(pilot: Any) -> None:
    await pilot.press("2", "a")
    await pilot.pause()
    await type_into(pilot, "#name", "two")
    await type_into(pilot, "#changes", "positional=alibi, norm=layernorm")
    await type_into(pilot, "#step", "3.5")
    await type_into(pilot, "#peak", "33")
    await pilot.press("enter")
    await pilot.pause()


async def test_undo_gives_the_check_column_back_its_width() -> None:
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one("#variants", DataTable)
        before = [c.get_render_width(table) for c in table.ordered_columns]
        await _two_factor_variant(pilot)
        assert column(table, 0)[-1] == "✗ 2 factors"
        assert table.ordered_columns[0].get_render_width(table) > before[0]
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert table.row_count == 6
        assert [c.get_render_width(table) for c in table.ordered_columns] == before


async def test_workload_table_fits_80_columns_even_with_a_flagged_variant() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await _two_factor_variant(pilot)
        table = app.screen.query_one("#variants", DataTable)
        assert column(table, 0)[-1] == "✗"  # the status line says what is wrong
        assert "changes 2 factors" in status(app)
        assert table_width(table) <= table.size.width
        title = str(app.screen.query_one("#variants-title", Label).render())
        assert "figures entered" in title  # the one source, named once


async def test_compare_at_80_columns_lists_every_card_with_its_configurations() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one("#per-config", DataTable)
        assert table_width(table) <= table.size.width
        cards = [c for c in column(table, 0) if c]
        assert cards == ["a6000", "a40", "rtx6000ada", "l40s", "a100-80"]
        assert table.row_count == 5 * 6  # six configurations under each card
    app = make_app()
    async with app.run_test(size=WIDE) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one("#per-config", DataTable)
        # Wide enough: side by side, one column per card.
        assert [str(c.label) for c in table.ordered_columns][1:] == [
            "a6000", "a40", "rtx6000ada", "l40s", "a100-80"]


async def test_compare_on_an_embedding_campaign_shows_throughput_per_card() -> None:
    app = make_app("embedding-7d")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one("#per-config", DataTable)
        assert table.row_count == 5
        assert "tokens/s per card" in [str(c.label) for c in table.ordered_columns]
        assert "throughput" in str(app.screen.query_one("#per-config-title", Label).render())


async def test_embedding_measure_screen_names_its_throughput_column() -> None:
    app = make_app("embedding-7d")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("4")
        await pilot.pause()
        table = app.screen.query_one("#results", DataTable)
        assert [str(c.label) for c in table.ordered_columns] == [
            "figure", "tokens/s per card", "source"]
        assert column(table, 1) == ["60,000"]


def test_length_quantiles_are_named_and_read_back() -> None:
    lengths = parse_lengths("8 310 1400 6000 32000")
    shown = show_lengths(lengths)
    assert shown == "min 8 · p50 310 · p90 1400 · p99 6000 · max 32000"
    assert parse_lengths(shown) == lengths
    assert parse_lengths("max=32000, min=8, p50=310, p90=1400, p99=6000") == lengths


async def test_campaign_card_names_tell_the_a100s_apart() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        table = app.screen.query_one("#cards", DataTable)
        await pilot.pause()
        names = column(table, 2)
        a100 = [n for n in names if n.startswith("A100")]
        assert len(a100) == 3 and len(set(a100)) == 3
        assert table_width(table) <= table.size.width
    assert all(card.short for card in load_catalog().cards.values())


async def test_headline_drops_its_tail_rather_than_wrap() -> None:
    app = make_app("embedding-7d")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        line = status(app)
        assert "\n" not in line and len(line) <= app.screen.query_one(StatusLine).content_size.width
        assert "1 of 1 version fit" in line
    # However long the headline grows, the first three parts stay.
    assert fitted("a · b · c · d · e", 5) == "a · b · c"
    assert fitted("a · b · c · d · e", 80) == "a · b · c · d · e"


async def test_palette_asks_before_opening_a_preset_over_unwritten_edits() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        # Nothing edited: the preset opens at once.
        app.ask_open_preset("ablation-3d")
        await pilot.pause()
        assert app.workspace.preset.campaign.name == "ablation-3d"
        # Opened, not edited: still nothing to lose.
        app.ask_open_preset("ablation-7d")
        await pilot.pause()
        assert app.workspace.preset.campaign.name == "ablation-7d"
        await pilot.press("m")  # an edit, not written
        await pilot.pause()
        command = next(c for c in app.get_system_commands(app.screen)
                       if c.title == "Open preset: embedding-7d")
        command.callback()
        await pilot.pause()
        assert "not been written" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await pilot.pause()
        assert app.workspace.preset.campaign.name == "ablation-7d"
        assert app.workspace.preset.campaign.window_days == 30
        command.callback()
        await pilot.pause()
        await pilot.press("y")
        await pilot.pause()
        assert app.workspace.preset.campaign.name == "embedding-7d"


async def test_enter_in_the_folder_writes_and_keep_says_the_files_were_kept(
        tmp_path: Path) -> None:
    out = tmp_path / "first"
    app = make_app(out_dir=tmp_path / "unused")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("6")
        await pilot.pause()
        await type_into(pilot, "#f-export-folder Input", str(out))
        await pilot.press("enter")
        await pilot.pause()
        assert sorted(p.name for p in out.iterdir()) == ["order.toml", "plan.toml", "runs.jsonl"]
        message = app.screen.query_one("#export-message")
        assert str(message.render()).startswith("Wrote ")
        (out / "plan.toml").write_text("mine")
        app.screen.query_one("#f-export-folder Input", Input).focus()
        await pilot.press("enter")
        await pilot.pause()
        assert "already exist" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await pilot.pause()
        assert str(message.render()) == "Kept the existing files; nothing written."
        assert (out / "plan.toml").read_text() == "mine"
        assert not (tmp_path / "unused").exists()


async def test_fields_out_of_focus_show_the_start_of_their_value() -> None:
    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("6")
        await pilot.pause()
        field = app.screen.query_one("#f-order-image Input", Input)
        field.focus()
        await pilot.pause()
        field.value = "ubuntu-22.04-with-a-name-far-longer-than-the-field-it-is-typed-in"
        await pilot.pause()
        assert len(field.value) > field.content_size.width  # longer than it shows
        field.cursor_position = len(field.value)
        await pilot.press("tab")
        await pilot.pause()
        assert not field.has_focus and field.cursor_position == 0


async def test_zero_cards_is_refused_in_plain_words() -> None:
    app: PlannerApp = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await type_into(pilot, "#f-campaign-cards Input", "0")
        assert "campaign.cards: must be at least 1" in status(app)
        assert "Input should" not in status(app)


async def test_fit_leaves_out_memory_bars_where_there_are_none() -> None:
    app = make_app("embedding-7d")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("3")
        await pilot.pause()
        assert not app.screen.query_one("#memory").display
        assert not app.screen.query_one("#bars").display
        assert "Memory" not in [b.description for b in app.screen.active_bindings.values()
                                for b in [b.binding]]
        app.open_preset(str(Path(__file__).parent / "snapshots" / "ablation-7d.toml"))
        await pilot.pause()
        assert app.screen.query_one("#bars").display
        assert app.screen.query_one("#memory").display


async def test_baseline_factors_wrap_and_edit_like_a_field() -> None:
    from textual.widgets import TextArea

    app = make_app()
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("2")
        await pilot.pause()
        area = app.screen.query_one("#f-training-baseline-factors TextArea", TextArea)
        assert area.text.endswith("activation_checkpointing=true")  # all of it, wrapped
        assert area.size.height == 2
        area.focus()
        await pilot.pause()
        area.text = area.text.replace("aux_loss=true", "aux_loss=false")
        await pilot.pause()
        # The variant `no-aux-loss` now repeats the baseline's value: refused, in words.
        assert "baseline's own value" in status(app)
        area.text = area.text.replace("aux_loss=false", "aux_loss=true")
        await pilot.pause()
        assert app.workspace.error is None
        await pilot.press("enter")  # moves on, adds no line
        await pilot.pause()
        assert not area.has_focus and "\n" not in area.text

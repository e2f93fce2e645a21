"""The terminal UI driven with Textual's pilot: each flow the user takes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from textual.widgets import DataTable, Input

from planner.cli.main import main as cli_main
from planner.spec.loading import load_preset
from screens.app import PlannerApp
from screens.state import Workspace
from screens.variant_form import VariantForm
from screens.widgets.matrix import MatrixTable
from screens.widgets.status import StatusLine
from tests.conftest import CREATED

SIZE = (100, 32)
FROZEN = Path(__file__).parent / "snapshots"


def make_app(preset: str = "ablation-7d", **kwargs: Any) -> PlannerApp:
    """The app on a frozen copy of a shipped preset, with a fixed plan timestamp."""
    p, _ = load_preset(str(FROZEN / f"{preset}.toml"))
    return PlannerApp(p, source=f"{preset}.toml", created=CREATED, **kwargs)


def status(app: PlannerApp) -> str:
    return str(app.screen.query_one(StatusLine).render())


def fit(ws: Workspace) -> int:
    return ws.plan.summary.matrix_runs_fit


async def type_into(pilot: Any, selector: str, text: str) -> None:
    """Replace the text of an input: short text key by key, as a user would; longer
    text at once (each key press costs a redraw, and tests must stay quick)."""
    field = pilot.app.screen.query_one(selector, Input)
    field.focus()
    await pilot.pause()
    if len(text) <= 3:
        field.value = ""
        await pilot.press(*text)
    else:
        field.value = text
    await pilot.pause()


async def test_switching_7_to_30_days_changes_the_runs_that_fit() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        before = fit(app.workspace)
        assert (before, app.workspace.plan.summary.matrix_runs) == (18, 18)
        assert "18 of 18 runs fit (optimal)" in status(app)
        await pilot.press("m")  # 30 days
        await pilot.pause()
        assert app.workspace.preset.campaign.window_days == 30
        assert fit(app.workspace) == 18
        assert "18 of 18 runs fit (optimal)" in status(app)
        await pilot.press("3")
        await pilot.pause()
        rows = [line.plain for line in app.screen.query_one(MatrixTable).lines()]
        assert next(r for r in rows if r.startswith("no-aux-loss")).split()[1:5] == [
            "✓", "✓", "✓", "3/3"]
        await pilot.press("1", "d")  # and down to 3 days
        await pilot.pause()
        assert fit(app.workspace) < before


async def test_window_by_mouse_and_custom_hours() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.click("#window RadioButton", offset=(2, 0))  # 3 days
        await pilot.pause()
        assert app.workspace.preset.campaign.window_days == 3
        await type_into(pilot, "#f-campaign-window-hours Input", "100")
        assert app.workspace.preset.campaign.hours == 100
        assert app.workspace.preset.campaign.window_days is None


async def test_choosing_a_card_and_cards() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        table = app.screen.query_one("#cards", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index("a100-80"))
        await pilot.press("enter")
        await pilot.pause()
        assert app.workspace.preset.campaign.card == "a100-80"
        # 80 GB: no variant needs a smaller micro-batch any more.
        assert app.workspace.plan.decisions == []
        await type_into(pilot, "#f-campaign-cards Input", "8")
        assert app.workspace.preset.campaign.cards == 8
        assert app.workspace.plan.summary.matrix_runs_fit == 18


async def test_adding_a_variant_adds_its_row_and_its_runs() -> None:
    app = make_app("ablation-30d")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one("#variants", DataTable)
        rows = table.row_count
        seeds = len(app.workspace.preset.training.seeds)  # type: ignore[union-attr]
        runs = app.workspace.plan.summary.matrix_runs
        await pilot.press("a")
        await pilot.pause()
        assert isinstance(app.screen, VariantForm)
        for selector, text in (("#name", "swiglu-off"), ("#changes", "activation=relu"),
                               ("#step", "3.4"), ("#peak", "30")):
            await type_into(pilot, selector, text)
        assert "✓ changes exactly one factor" in str(app.screen.query_one("#check").render())
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert table.row_count == rows + 1
        assert str(table.get_row_at(rows)[1]) == "swiglu-off"
        plan = app.workspace.plan
        assert app.workspace.error is None
        assert plan.summary.matrix_runs == runs + seeds
        assert [r.seed for r in plan.runs if r.variant == "swiglu-off" and r.kind == "train"]
        await pilot.press("3")
        await pilot.pause()
        assert any(line.plain.startswith("swiglu-off")
                   for line in app.screen.query_one(MatrixTable).lines())


async def test_two_factor_variant_is_flagged_and_the_last_good_plan_stays() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        good = app.workspace.plan
        await pilot.press("2", "a")
        await pilot.pause()
        await type_into(pilot, "#name", "two")
        await type_into(pilot, "#changes", "positional=alibi, norm=layernorm")
        # Flagged while typing, before saving.
        assert "changes 2 factors" in str(app.screen.query_one("#check").render())
        await type_into(pilot, "#step", "3")
        await type_into(pilot, "#peak", "30")
        await pilot.press("enter")
        await pilot.pause()
        table = app.screen.query_one("#variants", DataTable)
        assert str(table.get_row_at(table.row_count - 1)[0]) == "✗ 2 factors"
        assert app.workspace.error is not None
        assert "variants[5].changes" in status(app) and "changes 2 factors" in status(app)
        assert app.workspace.plan is good
        # Undo brings back the sound matrix and a current plan.
        await pilot.press("ctrl+z")
        await pilot.pause()
        assert app.workspace.error is None and table.row_count == 6


async def test_invalid_edits_show_a_message_and_never_crash() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        good = app.workspace.plan
        await type_into(pilot, "#f-campaign-cards Input", "0")
        assert "campaign.cards" in status(app)
        await type_into(pilot, "#f-campaign-cards Input", "four")
        assert "not a whole number" in status(app)
        assert app.workspace.plan is good and app.workspace.preset.campaign.cards == 4
        await type_into(pilot, "#f-campaign-cards Input", "2")
        assert app.workspace.error is None and app.workspace.preset.campaign.cards == 2
        await pilot.press("escape", "2")
        await pilot.pause()
        await type_into(pilot, "#f-training-seeds Input", "0, 0")
        assert "listed twice" in status(app)
        await type_into(pilot, "#f-training-micro-batch Input", "8")
        assert "effective_batch" in status(app)  # 8 × 4 × 1 breaks the rule of 64


async def test_switching_kind_shows_the_embedding_workload() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        app.screen.query_one("#f-campaign-kind").post_message(
            type(app.screen.query_one("#f-campaign-kind")).Edited(
                app.screen.query_one("#f-campaign-kind"), "campaign.kind", "embedding"))
        await pilot.pause()
        assert app.workspace.preset.campaign.kind == "embedding"
        assert app.workspace.plan.embedding is not None
        await pilot.press("2")
        await pilot.pause()
        assert app.screen.query_one("#embedding").display
        assert not app.screen.query_one("#training").display
        await type_into(pilot, "#f-embedding-truncation-tokens Input", "256")
        assert app.workspace.plan.embedding.truncation_tokens == 256  # type: ignore[union-attr]


def headless_export(preset_file: Path, tmp: Path, name: str, email: str) -> Path:
    """The same campaign written by the headless CLI, from the preset the app saved."""
    out = tmp / "headless"
    assert cli_main(["--preset", str(preset_file), "--out", str(out), "--created",
                     CREATED.isoformat(), "--contact-name", name,
                     "--contact-email", email]) == 0
    return out


async def test_export_writes_both_files_equal_to_the_headless_export(tmp_path: Path) -> None:
    out = tmp_path / "tui"
    app = make_app(out_dir=out)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("m", "6")  # 30 days, then Export
        await pilot.pause()
        await type_into(pilot, "#f-contact-email Input", "ada@example")
        assert "give both" in str(app.screen.query_one("#export-message").render())
        await type_into(pilot, "#f-contact-name Input", "Ada Lovelace")
        assert "contact.email" in str(app.screen.query_one("#export-message").render())
        await type_into(pilot, "#f-contact-email Input", "ada@example.org")
        await pilot.press("escape", "w")
        await pilot.pause()
        assert sorted(p.name for p in out.iterdir()) == ["order.toml", "plan.toml", "runs.jsonl"]
        await pilot.press("s")  # the edited campaign as a preset file
        await pilot.pause()
        headless = headless_export(out / "preset.toml", tmp_path, "Ada Lovelace",
                                   "ada@example.org")
        for name in ("plan.toml", "runs.jsonl", "order.toml"):
            assert (out / name).read_bytes() == (headless / name).read_bytes()
        assert 'status = "ready"' in (out / "order.toml").read_text()
        # Writing again asks first; "n" keeps the files.
        (out / "plan.toml").write_text("mine")
        await pilot.press("w")
        await pilot.pause()
        assert "already exist" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await pilot.pause()
        assert (out / "plan.toml").read_text() == "mine"
        await pilot.press("w", "y")
        await pilot.pause()
        assert (out / "plan.toml").read_bytes() == (headless / "plan.toml").read_bytes()


async def test_export_is_refused_while_the_preset_cannot_be_planned(tmp_path: Path) -> None:
    app = make_app(out_dir=tmp_path / "o")
    async with app.run_test(size=SIZE) as pilot:
        app.edit("campaign", card="h100-sxm")
        app.edit("order", cuda="11.0")  # too old for Hopper
        await pilot.press("6")
        await pilot.pause()
        assert "order.cuda" in status(app)
        await pilot.press("w")
        await pilot.pause()
        assert not (tmp_path / "o").exists()


async def test_help_and_command_palette_entries() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        await pilot.pause()
        titles = [c.title for c in app.get_system_commands(app.screen)]
        for title in ("Go to Fit", "Window: 30 days", "Card: NVIDIA A40",
                      "Open preset: embedding-7d", "Help", "Undo"):
            assert title in titles
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"window: 30")
        await pilot.pause(0.3)
        await pilot.press("enter")
        await pilot.pause()
        assert app.workspace.preset.campaign.window_days == 30
        command = next(c for c in app.get_system_commands(app.screen)
                       if c.title == "Open preset: ablation-3d")
        command.callback()
        await pilot.pause()
        # The window was edited and not written: opening another preset asks first.
        assert "not been written" in str(app.screen.query_one("#question").render())
        await pilot.press("y")
        await pilot.pause()
        assert app.workspace.preset.campaign.name == "ablation-3d"


async def test_mouse_on_the_navigation_bar_and_quit_asks_after_edits() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        nav = app.screen.query_one("#nav")
        text = str(nav.render())
        await pilot.click("#nav", offset=(text.index("3 Fit") + 1, 0))
        await pilot.pause()
        assert app.current_mode == "fit"
        await pilot.press("1", "m")  # an edit, not written
        await pilot.pause()
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert "not been written" in str(app.screen.query_one("#question").render())
        await pilot.press("n")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+q", "y")
        await pilot.pause()
    assert not app.is_running


def test_cli_opens_the_ui_on_any_preset(monkeypatch: pytest.MonkeyPatch) -> None:
    import screens.app

    seen: dict[str, Any] = {}

    def fake_run(preset: str | None, **kwargs: Any) -> int:
        seen.update(kwargs, preset=preset)
        return 0

    monkeypatch.setattr(screens.app, "run", fake_run)
    assert cli_main(["--preset", "embedding-3d", "--tui", "--created", CREATED.isoformat(),
                     "--out", "somewhere", "--contact-name", "Ada",
                     "--contact-email", "ada@example.org"]) == 0
    assert seen["preset"] == "embedding-3d" and seen["created"] == CREATED
    assert seen["out_dir"] == "somewhere" and seen["contact"] == ("Ada", "ada@example.org")
    # Bad input is refused before anything is drawn.
    assert cli_main(["--tui", "--contact-name", "Ada"]) == 2


async def test_compare_then_plan_on_the_card_shown() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one("#comparison", DataTable)
        row = table.get_row("l40s")
        assert str(row[3]) == "18/18"
        table.move_cursor(row=table.get_row_index("l40s"))
        await pilot.press("enter")
        await pilot.pause()
        plan = app.workspace.plan
        assert plan.campaign.card == "l40s" and plan.summary.matrix_runs_fit == 18
        assert plan.assumptions.figures[0].step_time_s.label() == (
            "scaled from NVIDIA RTX A6000")
        await type_into(pilot, "#f-compare-cards Input", "a40, nosuchcard")
        assert "nosuchcard" in str(app.screen.query_one("#compare-message").render())

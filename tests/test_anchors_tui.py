"""Card round trips through the terminal UI: Compare's adopt and screen 1's card list change
only the card, so coming back to the anchor card gives the same figures and plan."""

from __future__ import annotations

from typing import Any

from textual.widgets import DataTable

from planner.planfile.export import plan_toml
from screens import state
from tests.test_tui import SIZE, make_app


async def choose(pilot: Any, table: DataTable[Any], key: str) -> None:
    table.focus()
    table.move_cursor(row=table.get_row_index(key))
    await pilot.press("enter")
    await pilot.pause()


async def test_compare_and_back_gives_the_same_plan() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        preset, before = app.workspace.preset, plan_toml(app.workspace.plan)
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one("#comparison", DataTable)
        await choose(pilot, table, "l40s")
        plan = app.workspace.plan
        assert plan.campaign.card == "l40s"
        step = plan.assumptions.figures[0].step_time_s
        assert step.label() == "scaled from NVIDIA RTX A6000" and step.span()
        # The preset keeps the figure as entered on its card: only the card changed.
        assert app.workspace.preset == state.set_card(preset, "l40s")
        assert app.workspace.preset.ablation is not None
        assert app.workspace.preset.ablation.baseline.step_time_s.value == 3.6
        await pilot.press("2")
        await pilot.pause()
        variants = app.screen.query_one("#variants", DataTable)
        assert str(variants.get_row("baseline")[-1]) == "entered on a6000"
        await pilot.press("5")
        await pilot.pause()
        table = app.screen.query_one("#comparison", DataTable)
        table.focus()
        await choose(pilot, table, "a100-80")
        await choose(pilot, table, "a6000")
        assert app.workspace.preset == preset
        assert plan_toml(app.workspace.plan) == before
        assert app.workspace.plan.assumptions.figures[0].step_time_s.label() == "entered"


async def test_the_card_list_on_screen_1_and_back_gives_the_same_plan() -> None:
    app = make_app()
    async with app.run_test(size=SIZE) as pilot:
        preset, before = app.workspace.preset, plan_toml(app.workspace.plan)
        table = app.screen.query_one("#cards", DataTable)
        await choose(pilot, table, "h100-sxm")
        assert app.workspace.plan.assumptions.figures[0].step_time_s.label() == (
            "scaled from NVIDIA RTX A6000")
        await choose(pilot, table, "a40")
        await choose(pilot, table, "a6000")
        assert app.workspace.preset == preset
        assert plan_toml(app.workspace.plan) == before


async def test_the_2x_disagreement_is_said_on_the_fit_and_compare_screens() -> None:
    from textual.widgets import Static

    from planner.spec.loading import load_preset
    from planner.spec.preset import Preset
    from screens.app import PlannerApp
    from tests.conftest import CREATED

    shipped, _ = load_preset("ablation-7d")
    data = shipped.model_dump()
    data["ablation"]["model"] = None
    app = PlannerApp(Preset.model_validate(data), source="stand-in.toml", created=CREATED)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("3")
        await pilot.pause()
        said = str(app.screen.query_one("#warnings", Static).render())
        assert "baseline: the entered step time" in said and "differ" in said
        await pilot.press("5")
        await pilot.pause()
        assert "differ" in str(app.screen.query_one("#compare-provenance", Static).render())

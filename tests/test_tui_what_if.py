"""The terminal UI with a preset that has sweeps, and opened with what-if flags."""

from __future__ import annotations

import tomllib

import tomli_w
from textual.widgets import DataTable

from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from planner.spec.overrides import Overrides, apply_overrides
from planner.spec.shipped import shipped
from screens import state
from screens.app import PlannerApp
from screens.variant_form import VariantForm
from tests.conftest import CREATED

SIZE = (100, 32)


def _swept() -> PlannerApp:
    data = tomllib.loads(shipped("ablation-30d.toml").read_text())
    data["ablation"]["baseline"]["factors"]["lr"] = 3e-4
    data["ablation"]["sweeps"] = [{"factor": "lr", "levels": [1e-4, 3e-4, 1e-3]}]
    preset = parse_preset(tomllib.loads(tomli_w.dumps(data)), "sweep.toml")
    return PlannerApp(preset, source="sweep.toml", created=CREATED)


async def test_workload_lists_swept_variants_and_sends_their_edits_to_the_sweep() -> None:
    app = _swept()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        table = app.screen.query_one("#variants", DataTable)
        names = [str(table.get_row_at(i)[1]) for i in range(table.row_count)]
        assert names[-2:] == ["lr=0.0001", "lr=0.001"]
        before = app.workspace.preset
        table.focus()
        table.move_cursor(row=table.row_count - 1)
        await pilot.pause()
        await pilot.press("e")
        await pilot.pause()
        assert not isinstance(app.screen, VariantForm)
        await pilot.press("x")
        await pilot.pause()
        assert app.workspace.preset == before
        shown = [str(n.message) for n in app._notifications]
        assert any("comes from the sweep over lr" in m for m in shown), shown
        # Changing the baseline's own level moves the skipped level with it.
        base = before.training.baseline  # type: ignore[union-attr]
        factors = {**base.factors, "lr": 1e-4}
        app.attempt(lambda p: state.edit(p, "training.baseline", factors=factors))
        await pilot.pause()
        variants = [v.name for v in app.workspace.preset.training.variants]  # type: ignore[union-attr]
        assert variants[-2:] == ["lr=0.0003", "lr=0.001"] and app.workspace.error is None


async def test_the_ui_opened_with_flags_names_them_until_they_are_edited() -> None:
    catalog = load_catalog()
    preset, source = parse_preset(tomllib.loads(shipped("ablation-7d.toml").read_text()),
                                  "ablation-7d.toml"), "ablation-7d.toml"
    o = Overrides(cards=8)
    moved, lines = apply_overrides(preset, o, catalog, source)
    app = PlannerApp(moved, source=source, catalog=catalog, created=CREATED,
                     what_if=(o, lines))
    async with app.run_test(size=SIZE) as pilot:
        assert app.workspace.plan.assumptions.overrides == ["cards 4 → 8 (command line)"]
        app.edit("campaign", window_days=30)
        await pilot.pause()
        assert app.workspace.plan.assumptions.overrides == ["cards 4 → 8 (command line)"]
        app.edit("campaign", cards=2)
        await pilot.pause()
        assert app.workspace.plan.assumptions.overrides == []

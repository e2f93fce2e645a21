"""The embedding workload form edits every setting fixed for the campaign: the prompt as
typed, the backend, the vector size, and a token budget left to the planner."""

from __future__ import annotations

from typing import Any

from screens.widgets.form import ChoiceRow
from tests.test_tui import make_app, status, type_into

SIZE = (120, 36)


async def choose(pilot: Any, path: str, value: str) -> None:
    row = pilot.app.screen.query_one(f"#f-{path.replace('.', '-').replace('_', '-')}",
                                     ChoiceRow)
    row.post_message(ChoiceRow.Edited(row, path, value))
    await pilot.pause()


async def test_prompt_backend_dimensions_and_budget_are_edited_from_the_form() -> None:
    app = make_app("embedding-7d")
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("2")
        await pilot.pause()
        await type_into(pilot, "#f-embedding-prompt Input", "passage: ")
        e = app.workspace.preset.embedding
        assert e is not None and e.prompt == "passage: "  # the trailing space is kept
        await type_into(pilot, "#f-embedding-prompt Input", "")
        await choose(pilot, "embedding.backend", "sentence-transformers")
        assert app.workspace.preset.embedding.backend == "sentence-transformers"  # type: ignore[union-attr]
        await type_into(pilot, "#f-embedding-token-budget Input", "")
        assert app.workspace.preset.embedding.token_budget is None  # type: ignore[union-attr]
        await type_into(pilot, "#f-embedding-dimensions Input", "twelve")
        assert "not a whole number" in status(app)
        assert app.workspace.preset.embedding.dimensions is None  # type: ignore[union-attr]

"""The Measure screen driven with Textual's pilot, with injected measurers: failures become
messages, results flow into the plan, cancelling keeps what was measured."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from textual.widgets import DataTable, Static

from planner.errors import InputError
from screens.text import headline
from tests.test_tui import SIZE, make_app


class FakeProgress:
    def __init__(self, done: int, total: int, label: str) -> None:
        self.done, self.total, self.label = done, total, label


def fake_measure(error: BaseException | None = None, result: Any = None) -> Any:
    def measure(preset: Any, catalog: Any, *, steps: Any = None, progress: Any = None,
                cancel: threading.Event | None = None, source: str | None = None) -> Any:
        for i in range(3):
            if progress:
                progress(FakeProgress(i + 1, 3, f"baseline: step {i + 1}/3"))
        if error is not None:
            raise error
        return result
    return measure


class MeasureOOM(RuntimeError):
    pass


class MeasureUnavailable(RuntimeError):
    pass


@pytest.mark.parametrize(("error", "words"), [
    (MeasureUnavailable("torch is not installed"), "Measurement unavailable here: torch"),
    (InputError("cannot import 'mymodel:build'", field="ablation.measure.factory"),
     "cannot be measured: ablation.measure.factory"),
    (MeasureOOM("CUDA out of memory at micro-batch 1"), "Out of memory"),
    (ValueError("boom"), "Measurement failed (ValueError): boom"),
])
async def test_a_failing_measurement_shows_a_message(error: BaseException, words: str) -> None:
    app = make_app(measure=fake_measure(error))
    async with app.run_test(size=SIZE) as pilot:
        good = app.workspace.plan
        await pilot.press("4", "m")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert words in str(app.screen.query_one("#measure-message").render())
        assert app.workspace.plan is good and app.workspace.error is None


def measured(preset: Any) -> Any:
    """Measurements of every configuration, as `measure` returns them on an RTX A6000."""
    from planner.figures.measured import workload_fingerprint
    from planner.figures.measurements import (
        ConfigMeasurement,
        Device,
        Measurements,
        Memory,
        StepTime,
        Workload,
    )

    t = preset.training
    entries = [("baseline", t.baseline.factors)] + [
        (v.name, {**t.baseline.factors, **v.changes}) for v in t.variants]
    configs = [ConfigMeasurement(
        config=name, factors=factors, params=350_000_000, trainable_params=350_000_000,
        micro_batch=t.micro_batch, accumulation=t.accumulation,
        step_time=StepTime(median_s=2.0 + 0.1 * i, p10_s=1.9, p90_s=2.3, steps=20),
        memory=Memory(method="cuda", peak_gib=30.0 + i, per_sample_gib=1.5),
        flops_per_step=1e15) for i, (name, factors) in enumerate(entries)]
    return Measurements(
        preset=preset.campaign.name, kind=preset.campaign.kind,
        date="2026-01-01T00:00:00+00:00", torch="2.13.0", cuda="12.6", dtype="bf16",
        target_card="a6000",
        device=Device(name="NVIDIA RTX A6000", kind="cuda", card="a6000",
                      compute_capability="8.6"),
        workload=Workload(source="reference", spec={}, micro_batch=t.micro_batch,
                          accumulation=t.accumulation, fingerprint=workload_fingerprint(preset)),
        configs=configs)


async def test_measured_figures_flow_into_the_plan() -> None:
    app = make_app()
    app.measure_fn = fake_measure(result=measured(app.workspace.preset))
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "m")
        await app.workers.wait_for_complete()
        await pilot.pause()
        figures = app.workspace.plan.assumptions.figures
        assert {f.step_time_s.source for f in figures} == {"measured"}
        assert figures[0].step_time_s.value == 2.0
        assert "Measured on NVIDIA RTX A6000" in str(
            app.screen.query_one("#measure-message").render())
        assert str(app.screen.query_one("#results", DataTable).get_row_at(0)[2]) == (
            "measured on NVIDIA RTX A6000")
        await pilot.press("r")
        await pilot.pause()
        assert {f.step_time_s.source for f in app.workspace.plan.assumptions.figures} == {
            "entered"}


async def test_the_measurement_is_told_the_preset_file() -> None:
    # A transformers config.json named by the preset is looked for beside the preset.
    app = make_app()
    seen: list[str | None] = []

    def measure(preset: Any, catalog: Any, *, source: str | None = None, **kwargs: Any) -> Any:
        seen.append(source)
        return measured(preset)

    app.measure_fn = measure
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "m")
        await app.workers.wait_for_complete()
        await pilot.pause()
    assert seen == ["ablation-7d.toml"]


async def test_cancelling_a_measurement_keeps_the_partial_result() -> None:
    app = make_app()
    full = measured(app.workspace.preset)
    result = full.model_copy(update={"partial": True, "configs": full.configs[:3]})
    started = threading.Event()

    def slow(preset: Any, catalog: Any, *, steps: Any = None, progress: Any = None,
             cancel: threading.Event | None = None, source: str | None = None) -> Any:
        started.set()
        assert cancel is not None and cancel.wait(60)
        return result

    app.measure_fn = slow
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("4", "m")
        assert started.wait(60)
        await pilot.press("m")  # a second start is refused while one runs
        await pilot.press("c")
        await app.workers.wait_for_complete()
        await pilot.pause()
        said = str(app.screen.query_one("#measure-message").render())
        assert "3 of 6 configurations measured" in said and "previous figures" in said
        assert app.workspace.measurements is result
        plan = app.workspace.plan
        assert [f.step_time_s.source for f in plan.assumptions.figures] == [
            "measured"] * 3 + ["entered"] * 3
        assert "3 of 6 configurations measured" in headline(plan)
        await pilot.press("3")
        await pilot.pause()
        assert "3 of 6 configurations measured" in str(
            app.screen.query_one("#top", Static).render())


async def test_a_cancelled_remeasurement_replaces_only_what_it_measured() -> None:
    app = make_app()
    full = measured(app.workspace.preset)
    again = full.model_copy(update={"partial": True, "configs": [
        c.model_copy(update={"step_time": c.step_time.model_copy(update={"median_s": 9.0})})
        for c in full.configs[:2]]})
    async with app.run_test(size=SIZE) as pilot:
        app.use_measurements(full)
        app.use_measurements(again)
        await pilot.pause()
        steps = [f.step_time_s for f in app.workspace.plan.assumptions.figures]
        assert [f.value for f in steps[:2]] == [9.0, 9.0]
        assert [f.value for f in steps[2:]] == [
            c.step_time.median_s for c in full.configs[2:]]
        assert {f.source for f in steps} == {"measured"}
        assert "6 of 6 configurations measured" in headline(app.workspace.plan)

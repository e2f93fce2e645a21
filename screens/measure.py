"""Measure screen: step time and peak memory of every configuration, measured here in a
thread worker with a progress bar; the results flow into the plan.

Failures (torch missing, a broken factory, out of memory) become a message on the
screen; the event loop never waits on torch.
"""

from __future__ import annotations

import threading
from typing import Any, ClassVar

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.message import Message
from textual.widgets import DataTable, Label, ProgressBar, Static
from textual.worker import Worker, WorkerState

from planner.errors import InputError
from planner.planning.render import measured_line
from screens import state
from screens.base import PlannerScreen
from screens.state import Workspace
from screens.widgets.form import FieldRow
from screens.widgets.sources import shorten
from screens.widgets.tables import fill

INTRO = ("Measures each configuration's step time and peak memory with the preset's "
         "measurement workload, then plans with the measured figures (their provenance "
         "says where they were measured).")
INTRO_EMBEDDING = ("Measures the encoder's throughput in tokens per second on a batch of the "
                   "longest texts, with the preset's measurement workload, then plans with "
                   "the measured figure (its provenance says where it was measured).")


def describe_failure(error: BaseException) -> str:
    """A measurement failure in one line, for the screen."""
    name = type(error).__name__
    if isinstance(error, InputError):
        return f"The workload cannot be measured: {error}"
    if name == "MeasureUnavailable":
        return f"Measurement unavailable here: {error}"
    if name == "MeasureOOM" or "out of memory" in str(error).lower():
        return f"Out of memory: {error}"
    if isinstance(error, ModuleNotFoundError):
        return (f"Measurement unavailable here: {error.name} is not installed "
                "(pip install 'campaign-planner[measure]')")
    return f"Measurement failed ({name}): {error}"


def default_measure() -> Any:
    """`planner.measure.measure_preset`, imported when first needed (it pulls in no
    torch until it runs)."""
    from planner.measure import measure_preset

    return measure_preset


class MeasureScreen(PlannerScreen):
    """Measure the workload here; let the measured figures replace entered ones."""

    MODE = "measure"
    AUTO_FOCUS = "#results"
    BINDINGS: ClassVar = [
        Binding("m", "start", "Measure"),
        Binding("c", "cancel", "Cancel"),
        Binding("r", "forget", "Preset's figures"),
    ]

    class Progressed(Message):
        """Progress from the worker thread; a newer one replaces an unread older one."""

        def __init__(self, done: int, total: int, label: str) -> None:
            super().__init__()
            self.done, self.total, self.label = done, total, label

        def can_replace(self, message: Message) -> bool:
            return isinstance(message, MeasureScreen.Progressed)

    def __init__(self) -> None:
        super().__init__()
        self._cancel: threading.Event | None = None
        self.steps: int | None = None

    def body(self) -> ComposeResult:
        yield Static(INTRO, classes="hint", id="intro")
        yield FieldRow("Steps to time", "measure.steps", state.parse_optional_int,
                       placeholder="the preset's default", tooltip="Optimizer steps timed "
                       "per configuration; fewer is quicker and noisier")
        with Horizontal(id="progress-row"):
            # Idle, the bar stands still at 0%: an animated bar would say work is going on.
            yield ProgressBar(id="progress", total=1, show_eta=False)
            yield Label("idle: press m to measure", id="progress-label")
        yield Static("", id="measure-message", classes="message", markup=False)
        yield Label("Figures the plan uses", classes="section")
        yield DataTable(id="results", cursor_type="row", zebra_stripes=True)
        yield Static("", id="results-legend", classes="hint", markup=False)

    def show(self, ws: Workspace) -> None:
        intro = INTRO if ws.preset.embedding is None else INTRO_EMBEDDING
        self.query_one("#intro", Static).update(
            intro + (" It runs on this machine's GPU, or its CPU when it has none."
                     if self.planner.can_measure() else
                     " torch is not installed here: pip install 'campaign-planner[measure]' "
                     "to measure (planning needs no torch)."))
        table = self.query_one("#results", DataTable)
        a = ws.plan.assumptions
        t = a.throughput_tokens_per_s
        # Sources too long for the width are shortened to their kind and a mark, in full
        # in the legend under the table.
        if a.figures or t is None:
            name = max([13, *(len(f.config) for f in a.figures)])
            room = (self.size.width or 80) - 4 - name - 6 - 8 - 5 * 2
            short, legend = shorten([x for f in a.figures for x in (
                f.step_time_s.label(), f.peak_memory_gib.label())], room // 2)
            rows = [[f.config, f"{f.step_time_s.value:.3g}", short[f.step_time_s.label()],
                     f"{f.peak_memory_gib.value:.3g}", short[f.peak_memory_gib.label()]]
                    for f in a.figures]
            fill(table, ["configuration", "step s", "source", "peak GiB", "source "], rows)
        else:
            # An embedding campaign has one figure: the tokens a card embeds per second.
            short, legend = shorten([t.label()], (self.size.width or 80) - 4 - 20 - 17 - 6)
            fill(table, ["figure", "tokens/s per card", "source"],
                 [["embedding throughput", f"{t.value:,.0f}", short[t.label()]]])
        self.query_one("#results-legend", Static).update("\n".join(legend))

    def edited(self, path: str, value: object) -> None:
        self.steps = value if isinstance(value, int) else None
        self._message("")

    def invalid(self, path: str, message: str) -> None:
        self._message(f"✗ steps: {message}", error=True)

    def _message(self, text: str, *, error: bool = False) -> None:
        widget = self.query_one("#measure-message", Static)
        widget.set_class(error, "-error")
        widget.update(text)

    def action_start(self) -> None:
        """Measure every configuration in a thread worker."""
        if self._cancel is not None:
            self.notify("A measurement is already running (c cancels it).")
            return
        self._cancel = threading.Event()
        self.planner.running.add(self._cancel)
        self._message("")
        self.query_one("#progress", ProgressBar).update(total=None, progress=0)
        self.query_one("#progress-label", Label).update("starting…")
        ws = self.planner.workspace
        self._measure(ws.preset, self._cancel, self.steps)

    def action_cancel(self) -> None:
        """Stop after the current step; what was measured so far is kept, marked partial."""
        if self._cancel is None:
            return
        self._cancel.set()
        self.query_one("#progress-label", Label).update("cancelling after this step…")

    def action_forget(self) -> None:
        """Plan with the preset's own figures again."""
        if self.planner.workspace.measurements is not None:
            self.planner.use_measurements(None)
            self._message("Planning with the preset's own figures.")

    @work(thread=True, exclusive=True, exit_on_error=False, group="measure",
          name="measure")
    def _measure(self, preset: Any, cancel: threading.Event, steps: int | None) -> Any:
        measure = self.planner.measure_fn or default_measure()

        def progress(p: Any) -> None:
            self.post_message(self.Progressed(p.done, p.total, p.label))

        # The preset's file: a transformers config.json is looked for beside it.
        return measure(preset, self.planner.catalog, steps=steps, progress=progress,
                       cancel=cancel, source=self.planner.workspace.source)

    def on_measure_screen_progressed(self, message: Progressed) -> None:
        self.query_one("#progress", ProgressBar).update(total=message.total,
                                                        progress=message.done)
        self.query_one("#progress-label", Label).update(message.label)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker.name != "measure" or event.state in (WorkerState.PENDING,
                                                             WorkerState.RUNNING):
            return
        cancelled = self._cancel is not None and self._cancel.is_set()
        if self._cancel is not None:
            self.planner.running.discard(self._cancel)
        self._cancel = None
        label = self.query_one("#progress-label", Label)
        if event.state == WorkerState.SUCCESS:
            result = event.worker.result
            self.planner.use_measurements(result)
            partial = bool(getattr(result, "partial", False)) or cancelled
            count = measured_line(self.planner.workspace.plan).split(" (")[0]
            label.update(f"cancelled: {count}" if partial else "done")
            device = getattr(getattr(result, "device", None), "name", "this machine")
            self._message(f"Measured on {device}; {count or 'the plan uses these figures'}"
                          f"{'; the others keep their previous figures' if partial else ''}. "
                          "r goes back to the preset's figures.")
        elif event.state == WorkerState.ERROR:
            label.update("failed")
            error = event.worker.error or RuntimeError("unknown error")
            self._message("✗ " + describe_failure(error), error=True)
        else:
            label.update("cancelled")

"""The terminal UI's App: the current workspace, the bindings, the command palette.

The current campaign is one frozen `Preset` held in a `Workspace`; screens never change
it in place: they ask the app for an edit, the app builds the new preset, plans it, and
publishes the new workspace on `changed`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar

from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen
from textual.signal import Signal

from planner.errors import InputError
from planner.figures.measured import merge_measurements
from planner.spec.catalog import Catalog, load_catalog
from planner.spec.loading import DEFAULT_PRESET, load_preset, shipped_presets
from planner.spec.overrides import Overrides, apply_overrides
from planner.spec.preset import Preset
from screens import state
from screens.campaign import CampaignScreen
from screens.confirm import Confirm
from screens.help import HelpScreen
from screens.state import Workspace
from screens.widgets.nav import SCREENS

MeasureFn = Callable[..., Any]


# Each screen but the first is imported when first shown, so the first frame does not wait
# for it; plain imports, so the import contracts see them.
def _workload() -> Screen[Any]:
    from screens.workload import WorkloadScreen
    return WorkloadScreen()


def _fit() -> Screen[Any]:
    from screens.fit import FitScreen
    return FitScreen()


def _measure() -> Screen[Any]:
    from screens.measure import MeasureScreen
    return MeasureScreen()


def _compare() -> Screen[Any]:
    from screens.compare import CompareScreen
    return CompareScreen()


def _export() -> Screen[Any]:
    from screens.export import ExportScreen
    return ExportScreen()


def _advise() -> Screen[Any]:
    from screens.advise import AdviseScreen
    return AdviseScreen()


class PlannerApp(App[None]):
    """campaign-planner's interactive planner."""

    # Every screen's stylesheet loads once, at start: a screen's own CSS_PATH would make
    # Textual re-parse all styles the first time each screen shows.
    CSS_PATH: ClassVar = ["app.tcss", "campaign.tcss", "workload.tcss", "fit.tcss",
                          "measure.tcss", "compare.tcss", "export.tcss", "advise.tcss"]
    TITLE = "campaign-planner"
    # The first screen is imported with the app; the others when first shown, so the
    # first frame does not wait for them.
    MODES: ClassVar = {
        "campaign": CampaignScreen, "workload": _workload, "fit": _fit, "measure": _measure,
        "compare": _compare, "export": _export, "advise": _advise,
    }
    DEFAULT_MODE = "campaign"
    BINDINGS: ClassVar = [
        *(Binding(key, f"goto('{mode}')", title, show=False) for key, mode, title in SCREENS),
        # Function keys switch screens even while a text field has focus.
        *(Binding(f"f{i + 2}", f"goto('{mode}')", title, show=False, priority=True)
          for i, (_, mode, title) in enumerate(SCREENS)),
        # The navigation bar names F1 Help on every screen: the key bar keeps its room
        # for the screen's own keys (and Undo), which at 80 columns it needs.
        Binding("f1,question_mark", "help", "Help", show=False),
        Binding("ctrl+z", "undo", "Undo"),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, preset: Preset, *, source: str | None = None,
                 catalog: Catalog | None = None, created: datetime | None = None,
                 out_dir: str | Path = "plan", measure: MeasureFn | None = None,
                 what_if: tuple[Overrides, list[str]] | None = None) -> None:
        """`created` fixes the plan's timestamp (tests, reproducible exports); `measure`
        replaces `planner.measure.measure_preset` (tests); `what_if`: the command line's
        overrides already applied to `preset`, and their words."""
        super().__init__()
        self.catalog = catalog or load_catalog()
        self.created = created
        self.out_dir = str(out_dir)
        self.measure_fn = measure
        self.contact: tuple[str, str] = ("", "")
        self.exported = 0
        """Revision of the workspace last written to files (0: nothing written)."""
        self.opened = 0
        """Revision of the workspace when its preset was opened."""
        self.undone = -1
        """Revision of the workspace the last undo made (-1: none yet)."""
        self.running: set[threading.Event] = set()
        """Cancel events of thread work in progress (measurements), set when the app ends."""
        self.workspace: Workspace = state.start(preset, self.catalog, created=created,
                                                source=source, what_if=what_if)
        self.changed: Signal[Workspace] = Signal(self, "workspace-changed")

    # Edits -------------------------------------------------------------------------

    def _publish(self, ws: Workspace) -> None:
        self.workspace = ws
        self.changed.publish(ws)

    def replace(self, preset: Preset, *, remember: bool = True) -> None:
        """Make `preset` current and replan it (no-op when nothing changed)."""
        ws = self.workspace
        if preset == ws.preset and ws.error is None:
            return
        self._publish(state.apply(ws, preset, self.catalog, created=self.created,
                                  remember=remember))

    def edit(self, section: str, **updates: Any) -> None:
        """Replace fields of a preset section; a refused edit shows its message."""
        try:
            preset = state.edit(self.workspace.preset, section, **updates)
        except InputError as exc:
            self._publish(state.fail(self.workspace, exc))
            return
        self.replace(preset)

    def attempt(self, build: Callable[[Preset], Preset]) -> bool:
        """Replace the preset with `build(preset)`; False (and the message shown) when
        `build` raises InputError."""
        try:
            preset = build(self.workspace.preset)
        except InputError as exc:
            self._publish(state.fail(self.workspace, exc))
            return False
        self.replace(preset)
        return True

    def refuse(self, message: str, field: str = "") -> None:
        """Show why typed text cannot be used; preset and plan stay as they are."""
        self._publish(state.fail(self.workspace, InputError(message, field=field)))

    def use_measurements(self, measurements: Any) -> None:
        """Let measurements flow into the plan; a partial one replaces only the
        configurations it measured."""
        ws = self.workspace
        if measurements is not None:
            measurements = merge_measurements(ws.measurements, measurements)
        self._publish(state.apply(ws, ws.preset, self.catalog, created=self.created,
                                  measurements=measurements, remember=False))

    def open_preset(self, name_or_path: str) -> None:
        """Replace the campaign with a shipped preset or a preset file."""
        try:
            preset, source = load_preset(name_or_path)
        except InputError as exc:
            self._publish(state.fail(self.workspace, exc))
            return
        ws = dataclasses.replace(self.workspace, source=source, what_if=None)
        self._publish(state.apply(ws, preset, self.catalog, created=self.created,
                                  measurements=None))
        self.opened = self.workspace.revision
        self.notify(f"Opened {source}")

    def can_measure(self) -> bool:
        """Whether measuring can run here: torch is installed, or a measurer was given."""
        if self.measure_fn is not None:
            return True
        from planner.measure import torch_available

        return torch_available()

    def exit(self, *args: Any, **kwargs: Any) -> None:
        """Exit; thread work is asked to stop first (Textual waits for its workers)."""
        if self.stop_work():
            self.notify("Stopping the measurement in progress…")
        super().exit(*args, **kwargs)

    def stop_work(self) -> bool:
        """Ask every thread still working to stop; True when one was asked."""
        asked = bool(self.running)
        for event in self.running:
            event.set()
        self.running.clear()
        return asked

    # Actions -----------------------------------------------------------------------

    def action_goto(self, mode: str) -> None:
        """Show a screen."""
        self.switch_mode(mode)

    def unsaved(self) -> bool:
        """Whether the campaign was edited since it was opened or last written."""
        ws = self.workspace
        return bool(ws.history) and ws.revision not in (self.exported, self.opened)

    def after_asking(self, question: str, yes: str, then: Callable[[], object]) -> None:
        """Run `then` now, or, when edits were not written, once the user says `yes`."""
        if not self.unsaved():
            then()
            return

        def answered(ok: bool | None) -> None:
            if ok:
                then()

        self.push_screen(Confirm(f"The edited campaign has not been written. {question} "
                                 "(Export, key 6, writes plan.toml and order.toml.)",
                                 yes=yes, no="Stay"), answered)

    async def action_quit(self) -> None:
        """Quit; after edits that were not written, ask first."""
        self.after_asking("Quit anyway?", "Quit", self.exit)

    def ask_open_preset(self, name: str) -> None:
        """Open a preset in place of the campaign; after edits that were not written,
        ask first (the palette's "Open preset")."""
        self.after_asking(f"Open {name} in its place?", "Open",
                          lambda: self.open_preset(name))

    def action_help(self) -> None:
        """Show the help screen."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_undo(self) -> None:
        """Go back to the preset before the last edit."""
        ws = self.workspace
        if not ws.history:
            self.notify("Nothing to undo")
            return
        *rest, previous = ws.history
        back = state.apply(dataclasses.replace(ws, history=tuple(rest)), previous,
                           self.catalog, created=self.created, remember=False)
        self.undone = back.revision
        self._publish(back)

    def action_fill_capacity(self) -> None:
        """Set the seeds (or versions) to the window's capacity, as one undoable edit."""
        ws = self.workspace
        if not ws.current:
            self.notify("Fix the campaign first: the plan on screen is not its plan")
            return
        self.attempt(lambda p: state.fill_to_capacity(p, ws.plan))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for key, mode, title in SCREENS:
            yield SystemCommand(f"Go to {title}", f"Show the {title} screen (key {key})",
                                lambda m=mode: self.switch_mode(m))
        adopt = getattr(screen, "adopt_highlighted", None)
        yield SystemCommand("Adopt the highlighted order (Advise)",
                            "Plan on the card × count × window highlighted in Advise (Enter "
                            "there)" if adopt else "Show Advise, whose Enter adopts the "
                            "highlighted order (key 7)",
                            adopt or (lambda: self.switch_mode("advise")))
        yield SystemCommand("Help", "Keys and screens explained (F1)", self.action_help)
        yield SystemCommand("Undo", "Go back to the preset before the last edit (ctrl+z)",
                            self.action_undo)
        yield SystemCommand("Fill to capacity", "Seeds (or versions) up to what the window "
                            "holds; ctrl+z undoes it (key f on Fit)", self.action_fill_capacity)
        for days in (3, 7, 30):
            yield SystemCommand(f"Window: {days} days", f"Rent the cards for {days} days",
                                lambda d=days: self.attempt(lambda p: state.set_window(p, d)))
        for key, card in self.catalog.cards.items():
            yield SystemCommand(f"Card: {card.name}", f"Plan on {key}, {card.memory_gib:g} GB "
                                f"{card.architecture}", lambda k=key: self.attempt(
                                    lambda p: state.set_card(p, k)),
                                discover=False)
        for name, line in shipped_presets().items():
            yield SystemCommand(f"Open preset: {name}", line,
                                lambda n=name: self.ask_open_preset(n),
                                discover=False)


def run(preset_name: str | None = None, *, catalog: str | None = None,
        created: datetime | None = None, out_dir: str | None = None,
        contact: tuple[str, str] = ("", ""), overrides: Overrides | None = None) -> int:
    """Open the UI on a preset, with the command line's what-if `overrides` applied; the
    CLI's `--tui` and no-argument entry point. Bad input raises InputError before anything
    is drawn."""
    preset, source = load_preset(preset_name or DEFAULT_PRESET)
    cards = load_catalog(catalog)
    what_if = None
    if overrides is not None and overrides.given():
        preset, lines = apply_overrides(preset, overrides, cards, source)
        what_if = (overrides, lines)
    app = PlannerApp(preset, source=source, catalog=cards, created=created,
                     out_dir=out_dir or "plan", what_if=what_if)
    app.contact = contact
    try:
        app.run()
    finally:
        app.stop_work()
    return 0

"""The variant editor: a modal form for one variant (or the baseline), its one-factor check
shown while typing."""

from __future__ import annotations

from typing import ClassVar

from pydantic import ValidationError
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from planner.errors import from_validation
from planner.planning.discipline import variant_findings
from planner.spec.costs import Figure
from planner.spec.preset import Baseline, Training, Variant
from screens import state


def figure(text: str, old: Figure | None, what: str) -> Figure:
    """The figure typed: the old one (provenance kept) when the value is unchanged, else an
    `entered` figure."""
    value = state.parse_float(text)
    if old is not None and value == old.value:
        return old
    if value <= 0:
        raise ValueError(f"{what} must be more than 0")
    return Figure(value=value, source="entered", note="entered in campaign-planner")


class VariantForm(ModalScreen[Variant | Baseline | None]):
    """Add or edit a variant (or edit the baseline); dismisses with the model, or None."""

    BINDINGS: ClassVar = [Binding("escape", "cancel", "Cancel"),
                          Binding("ctrl+s", "save", "Save")]
    DEFAULT_CSS = """
    VariantForm { align: center middle; }
    VariantForm > Vertical { width: 76; max-width: 100%; height: auto; max-height: 100%;
                             border: thick $accent; background: $surface; padding: 0 1; }
    VariantForm Horizontal { height: 1; }
    VariantForm Horizontal > Label { width: 20; color: $text-muted; }
    VariantForm Input { width: 1fr; }
    VariantForm #check { height: auto; margin: 1 0 0 0; }
    VariantForm #check.-bad { color: $error; }
    VariantForm #buttons { height: 1; margin-top: 1; align-horizontal: right; }
    VariantForm Button { margin-left: 2; }
    """

    def __init__(self, training: Training, index: int | None, *, baseline: bool = False) -> None:
        super().__init__()
        self.training = training
        self.index = index
        self.baseline = baseline
        self.old: Variant | Baseline | None = (
            training.baseline if baseline else
            training.variants[index] if index is not None else None)

    def _row(self, label: str, name: str, value: str, placeholder: str = "") -> ComposeResult:
        with Horizontal():
            yield Label(label)
            yield Input(value, id=name, placeholder=placeholder, compact=True)

    def compose(self) -> ComposeResult:
        old = self.old
        title = ("Baseline" if self.baseline else
                 f"Variant {old.name}" if isinstance(old, Variant) else "New variant")
        with Vertical():
            yield Label(title, classes="title")
            if self.baseline:
                yield from self._row("Factors", "changes",
                                     state.show_factors(self.training.baseline.factors))
            else:
                yield from self._row("Name", "name", old.name if isinstance(old, Variant) else "",
                                     "letters, digits, . _ -")
                yield from self._row("Changes", "changes", state.show_factors(
                    old.changes) if isinstance(old, Variant) else "", "factor=value")
            yield from self._row("Step time s", "step", state.show_number(
                old.step_time_s.value) if old else "", "seconds per optimizer step")
            yield from self._row("Peak memory GiB", "peak", state.show_number(
                old.peak_memory_gib.value) if old else "", "per card, at the micro-batch")
            yield from self._row("Memory/sample GiB", "per-sample", state.show_number(
                old.memory_per_sample_gib) if old else "", "optional")
            if not self.baseline:
                yield from self._row("Waive reason", "waive", old.waive_one_factor if isinstance(
                    old, Variant) else "", "only to accept a rule break")
            yield Static("", id="check")
            with Horizontal(id="buttons"):
                yield Button("Cancel", id="cancel", compact=True)
                yield Button("Save", id="save", variant="primary", compact=True)

    def on_mount(self) -> None:
        self._check()

    def _text(self, name: str) -> str:
        return self.query_one(f"#{name}", Input).value

    def build(self) -> Variant | Baseline:
        """The model the form describes; ValueError with a message when it cannot be."""
        old = self.old
        changes = state.parse_factors(self._text("changes"))
        step = figure(self._text("step"), old.step_time_s if old else None, "step time")
        peak = figure(self._text("peak"), old.peak_memory_gib if old else None, "peak memory")
        per_sample = state.parse_optional_float(self._text("per-sample"))
        try:
            if self.baseline:
                return Baseline(factors=changes, step_time_s=step, peak_memory_gib=peak,
                                memory_per_sample_gib=per_sample)
            return Variant(name=self._text("name").strip(), changes=changes,
                           step_time_s=step, peak_memory_gib=peak,
                           memory_per_sample_gib=per_sample,
                           waive_one_factor=self._text("waive").strip())
        except ValidationError as exc:
            raise ValueError(str(from_validation(exc, None))) from None

    def _rule(self) -> tuple[list[str], str]:
        """The one-factor rule's complaints about the changes typed, and the waiver."""
        if self.baseline:
            return [], ""
        try:
            changes = state.parse_factors(self._text("changes"))
        except ValueError:
            return [], ""
        waive = self._text("waive").strip()
        # Only the changes matter to the rule: a sketch without figures, not validated.
        sketch = Variant.model_construct(name="", changes=changes,  # type: ignore[call-arg]
                                         waive_one_factor=waive)
        return variant_findings(self.training, sketch), waive

    def _check(self) -> None:
        check = self.query_one("#check", Static)
        problems, waive = self._rule()
        lines = []
        if problems:
            mark = "⚠" if waive else "✗"
            lines.append(f"{mark} " + "; ".join(problems) + (f" — waived: {waive}" if waive
                                                              else ""))
        try:
            self.build()
        except ValueError as exc:
            lines.append(f"✗ {exc}")
        bad = any(line.startswith("✗") for line in lines)
        if not lines:
            lines.append("✓ baseline" if self.baseline else
                         "✓ changes exactly one factor of the baseline")
        check.set_class(bad, "-bad")
        check.update("\n".join(lines))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self._check()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.action_save()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "save":
            self.action_save()
        else:
            self.action_cancel()

    def action_save(self) -> None:
        """Close with the variant; a variant that breaks the rule is saved and flagged."""
        try:
            model = self.build()
        except ValueError:
            self._check()
            return
        self.dismiss(model)

    def action_cancel(self) -> None:
        """Close without changing anything."""
        self.dismiss(None)

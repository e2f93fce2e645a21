"""Workload screen: what runs in the window.

Ablation and adaptation: the baseline's factors, the variants (add, edit, remove; a break
of the one-factor rule flagged at once), seeds, steps, evaluation and checkpoints, the
effective-batch rule; adaptation also its base model, trained parameters and dataset.
Embedding: the corpus and its fixed settings (see `screens.embedding_form`).
"""

from __future__ import annotations

import re
from typing import ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Vertical
from textual.widgets import DataTable, Label, Static

from planner.planning.discipline import variant_findings
from planner.spec.costs import Figure
from planner.spec.preset import Adaptation, Baseline, Overheads, Training, Variant
from screens import state
from screens.base import PlannerScreen
from screens.embedding_form import EmbeddingForm
from screens.state import Workspace
from screens.variant_form import VariantForm
from screens.widgets.form import ChoiceRow, FieldRow, WrapRow, help_of
from screens.widgets.tables import fill


def _training_rows() -> list[FieldRow]:
    t, o = Training, Overheads
    return [
        FieldRow("Steps", "training.steps", state.parse_int, tooltip=help_of(t, "steps")),
        FieldRow("Seeds", "training.seeds", state.parse_ints, tooltip=help_of(t, "seeds")),
        FieldRow("Micro-batch", "training.micro_batch", state.parse_int,
                 tooltip=help_of(t, "micro_batch")),
        FieldRow("Accumulation", "training.accumulation", state.parse_int,
                 tooltip=help_of(t, "accumulation")),
        FieldRow("Cards per run", "training.cards_per_run", state.parse_int,
                 tooltip=help_of(t, "cards_per_run")),
        FieldRow("Effective batch", "training.effective_batch", state.parse_optional_int,
                 tooltip=help_of(t, "effective_batch"), placeholder="mb × acc × cards"),
        FieldRow("Eval every steps", "overheads.eval_every_steps", state.parse_int,
                 tooltip=help_of(o, "eval_every_steps")),
        FieldRow("Eval minutes", "overheads.eval_minutes", state.parse_float,
                 tooltip=help_of(o, "eval_minutes")),
        FieldRow("Ckpt every steps", "overheads.checkpoint_every_steps", state.parse_int,
                 tooltip=help_of(o, "checkpoint_every_steps")),
        FieldRow("Ckpt write min", "overheads.checkpoint_write_minutes", state.parse_float,
                 tooltip=help_of(o, "checkpoint_write_minutes")),
    ]


SHORT_FINDINGS = ((r"^changes (\d+) factors", r"\1 factors"), (r"^changes no factor", "no factor"),
                  (r"^changes '.*', which the baseline lacks", "new factor"),
                  (r"^sets .* the baseline's own value", "baseline value"))
"""A finding of the one-factor check in two words, for the table (the status line and the
variant editor say it in full)."""


def flag(training: Training, variant: Variant, *, wide: bool = True) -> str:
    """The one-factor check of a variant in a few words; a mark alone when not `wide`."""
    problems = variant_findings(training, variant)
    if not problems:
        return "✓"
    mark = "⚠" if variant.waive_one_factor else "✗"
    if not wide:
        return mark
    short = problems[0]
    for pattern, words in SHORT_FINDINGS:
        if re.match(pattern, short):
            short = re.sub(pattern + ".*", words, short, flags=re.S)
            break
    else:
        short = short if len(short) <= 16 else short[:15] + "…"
    return f"⚠ waived: {short}" if variant.waive_one_factor else f"✗ {short}"


def sources(costed: Baseline | Variant, card: str = "") -> str:
    """Provenance of the step time and the peak, once when they agree; with the card they
    were taken on when it is not the campaign's `card` (the plan scales them from it)."""
    def one(fig: Figure) -> str:
        return fig.label() + (f" on {fig.card}" if fig.card not in ("", card) and fig.source
                              in ("entered", "analytic") else "")

    step, peak = one(costed.step_time_s), one(costed.peak_memory_gib)
    return step if step == peak else f"step {step}, peak {peak}"


WIDE_TABLE = 100
"""Screens at least this wide show the configurations table in full."""


class WorkloadScreen(PlannerScreen):
    """Edit the workload: the matrix of a training campaign, or an embedding corpus."""

    MODE = "workload"
    AUTO_FOCUS = "#variants"
    BINDINGS: ClassVar = [
        Binding("a", "add", "Add variant"),
        Binding("e", "edit", "Edit"),
        Binding("x,delete", "remove", "Remove"),
        Binding("v", "focus_table", "Variants"),
    ]

    _want_row: int | None = None
    _wide = False

    def body(self) -> ComposeResult:
        with Vertical(id="training"):
            with Grid(id="adaptation-grid"):
                a = Adaptation
                yield FieldRow("Base model", "adaptation.base_model", state.parse_text,
                               tooltip=help_of(a, "base_model"))
                yield ChoiceRow("Trained params", "adaptation.trained_parameters",
                                ("full", "adapter"), "adapter",
                                tooltip=help_of(a, "trained_parameters"))
                yield FieldRow("Dataset", "adaptation.dataset", state.parse_text,
                               tooltip=help_of(a, "dataset"))
            with Grid(id="training-grid"):
                yield from _training_rows()
            yield WrapRow("Baseline factors", "training.baseline.factors",
                          state.parse_factors, tooltip=help_of(Baseline, "factors"))
            yield Static("", id="rule", classes="hint")
            yield Label("Configurations: a add · e/Enter edit · x remove", classes="section",
                        id="variants-title")
            yield DataTable(id="variants", cursor_type="row", zebra_stripes=True)
        yield EmbeddingForm(id="embedding")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Variant keys mean nothing for an embedding corpus: hide them from the footer.
        if action in ("add", "edit", "remove", "focus_table"):
            return self.planner.workspace.preset.training is not None
        return True

    def show(self, ws: Workspace) -> None:
        p = ws.preset
        training = p.training
        self.refresh_bindings()
        self.query_one("#training").display = training is not None
        self.query_one(EmbeddingForm).display = training is None
        if training is None:
            self.query_one(EmbeddingForm).show(p)
            return
        adaptation = p.adaptation
        self.query_one("#adaptation-grid").display = adaptation is not None
        o = p.overheads
        values = {
            "training.steps": str(training.steps),
            "training.seeds": ", ".join(map(str, training.seeds)),
            "training.micro_batch": str(training.micro_batch),
            "training.accumulation": str(training.accumulation),
            "training.cards_per_run": str(training.cards_per_run),
            "training.effective_batch": state.show_number(training.effective_batch),
            "overheads.eval_every_steps": str(o.eval_every_steps),
            "overheads.eval_minutes": state.show_number(o.eval_minutes),
            "overheads.checkpoint_every_steps": str(o.checkpoint_every_steps),
            "overheads.checkpoint_write_minutes": state.show_number(o.checkpoint_write_minutes),
            "training.baseline.factors": state.show_factors(training.baseline.factors),
        }
        if adaptation is not None:
            values |= {"adaptation.base_model": adaptation.base_model,
                       "adaptation.trained_parameters": adaptation.trained_parameters,
                       "adaptation.dataset": adaptation.dataset}
        for row in self.query(FieldRow):
            if row.path in values:
                row.sync(values[row.path])
        self.query_one("#rule", Static).update(
            f"Effective batch: {training.micro_batch} × {training.accumulation} × "
            f"{training.cards_per_run} card{'s' if training.cards_per_run > 1 else ''} = "
            f"{training.rule_batch} per step, kept by every variant")
        self._fill(training)

    def _fill(self, training: Training) -> None:
        # Narrow screens: short headers and check marks alone (the status line says what is
        # wrong), the source left out when every figure shares it (the title names it).
        wide = (self.size.width or 80) >= WIDE_TABLE
        b = training.baseline
        card = self.planner.workspace.preset.campaign.card
        costed: list[Baseline | Variant] = [b, *training.variants]
        sourced = {sources(c, card) for c in costed}
        rows = [["kept" if wide else "✓", "baseline", "(the reference)", f"{b.step_time_s.value:g}",
                 f"{b.peak_memory_gib.value:g}", state.show_number(b.memory_per_sample_gib),
                 sources(b, card)]]
        rows += [[flag(training, v, wide=wide), v.name, state.show_factors(v.changes),
                  f"{v.step_time_s.value:g}", f"{v.peak_memory_gib.value:g}",
                  state.show_number(v.memory_per_sample_gib), sources(v, card)]
                 for v in training.variants]
        headers = ["check", "name", "changes", "step s", "peak GiB", "GiB/sample", "source"]
        title = "Configurations: a add · e/Enter edit · x remove"
        if not wide:
            headers[4:6] = ["peak", "/sample"]
            title = "Configurations (memory in GiB): a add · e edit · x remove"
            if len(sourced) == 1:
                headers.pop()
                rows = [r[:-1] for r in rows]
                title = (f"Configurations (memory in GiB, figures {sourced.pop()}): a add · "
                         "e edit · x remove")
        self.query_one("#variants-title", Label).update(title)
        table = self.query_one("#variants", DataTable)
        want, self._want_row = self._want_row, None
        fill(table, headers, rows, keys=["baseline", *(f"v{i}" for i in
                                                      range(len(training.variants)))])
        if want is not None and table.row_count:
            table.move_cursor(row=min(want, table.row_count - 1))

    def on_resize(self, event: events.Resize) -> None:
        training = self.planner.workspace.preset.training
        if training is not None and (event.size.width >= WIDE_TABLE) != self._wide:
            self._wide = event.size.width >= WIDE_TABLE
            self._fill(training)

    def _selected(self) -> int | None:
        """Index of the selected variant; -1 for the baseline; None when no table."""
        training = self.planner.workspace.preset.training
        if training is None:
            return None
        return self.query_one("#variants", DataTable).cursor_row - 1

    def action_add(self) -> None:
        """Write down a new variant."""
        training = self.planner.workspace.preset.training
        if training is not None:
            self.app.push_screen(VariantForm(training, None), self._saved(None))

    def action_edit(self) -> None:
        """Edit the selected variant or the baseline."""
        training = self.planner.workspace.preset.training
        index = self._selected()
        if training is None or index is None:
            return
        if index < 0:
            self.app.push_screen(VariantForm(training, None, baseline=True), self._saved(-1))
        elif not self._swept(training, index):
            self.app.push_screen(VariantForm(training, index), self._saved(index))

    def _swept(self, training: Training, index: int) -> bool:
        """Whether variant `index` comes from a sweep (then say where it is changed)."""
        v = training.variants[index]
        if v.sweep:
            self.notify(f"{v.name} comes from the sweep over {v.sweep}: change its levels "
                        "(or the baseline's value) in the preset file", severity="warning")
        return bool(v.sweep)

    def _saved(self, index: int | None):  # type: ignore[no-untyped-def]
        def done(model: Variant | Baseline | None) -> None:
            if isinstance(model, Baseline):
                self.planner.attempt(lambda p: state.edit(p, "training", baseline=model))
            elif isinstance(model, Variant):
                if index is None:
                    self._want_row = len(self.planner.workspace.preset.training.variants) + 1  # type: ignore[union-attr]
                self.planner.attempt(lambda p: state.put_variant(p, model, index))
        return done

    def action_remove(self) -> None:
        """Remove the selected variant (the baseline is always kept)."""
        index = self._selected()
        if index is None:
            return
        if index < 0:
            self.notify("The baseline is always kept.", severity="warning")
            return
        training = self.planner.workspace.preset.training
        if training is not None and self._swept(training, index):
            return
        self.planner.attempt(lambda p: state.drop_variant(p, index))

    def action_focus_table(self) -> None:
        """Move to the variants table."""
        self.query_one("#variants", DataTable).focus()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_edit()

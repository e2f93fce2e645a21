"""Export screen: the order form, a preview of both files and of the report, and the atomic
writes (`w` the plan and order, `r` report.html beside them).

The contact goes into the order only (as the headless `--contact-name/--contact-email`
do), so the files equal a headless export of the same preset.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Grid, Horizontal
from textual.widgets import Button, Static, TabbedContent, TabPane, TextArea

from planner.errors import InputError
from planner.planfile.export import order_toml, plan_texts, write_exports
from planner.planfile.plan import plan_id
from planner.planfile.runsfile import NAME as RUNS_FILE
from planner.report.outline import outline
from planner.spec.preset import OrderSpec
from planner.tomlio import write_atomic
from screens import state
from screens.base import PlannerScreen
from screens.confirm import Confirm
from screens.state import Workspace
from screens.widgets.form import FieldRow, WrapRow, help_of
from screens.widgets.preview import Preview

FILES = ("plan.toml", RUNS_FILE, "order.toml")
"""What `w` writes."""
REPORT = "report.html"
"""What `r` writes beside them: the plan as a picture (`campaign-planner report`)."""
HEAD_BYTES = 4 << 20
"""Bytes of a file read to tell which plan it is of: its header lies well within."""


def plan_there(path: Path) -> str | None:
    """The id (`plan_id`) of the plan in a plan.toml, from its header alone (the runs
    are not read); None when the file cannot be read as a plan's header."""
    try:
        with path.open("rb") as f:
            text = f.read(HEAD_BYTES).decode("utf-8", errors="replace")
        # The top-level values and [campaign], up to the table after it.
        at = text.index("\n[campaign]\n")
        end = text.find("\n[", at + 1)
        head = tomllib.loads(text[:end] if end > 0 else text)
        campaign_id, revision = head["campaign"]["id"], head.get("revision", 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not isinstance(campaign_id, str) or not isinstance(revision, int):
        return None
    return campaign_id if not revision else f"{campaign_id}-r{revision}"


def report_there(path: Path) -> str | None:
    """The campaign id a report.html names in its title, or None."""
    try:
        with path.open("rb") as f:
            head = f.read(64 << 10).decode("utf-8", errors="replace")
    except OSError:
        return None
    found = re.search(r"<title>[^<]*plan id ([A-Za-z0-9_.-]+)</title>", head)
    return found[1] if found else None


def _named(plan: str | None) -> str:
    return f"of plan {plan}" if plan is not None else "of no plan that can be read"


class ExportScreen(PlannerScreen):
    """Fill in the order, preview plan.toml and order.toml, write them."""

    MODE = "export"
    AUTO_FOCUS = "#preview"
    BINDINGS: ClassVar = [Binding("w,ctrl+s", "write", "Write files"),
                          Binding("r", "write_report", "Report"),
                          Binding("s", "save_preset", "Save preset"),
                          Binding("p", "focus_preview", "Preview")]

    def body(self) -> ComposeResult:
        o = OrderSpec
        with Grid(id="order-grid"):
            yield FieldRow("Contact name", "contact.name", state.parse_text,
                           placeholder="empty: draft order")
            yield FieldRow("Contact email", "contact.email", state.parse_text,
                           placeholder="empty: no email")
            yield FieldRow("OS image", "order.image", state.parse_text,
                           tooltip=help_of(o, "image"))
            yield FieldRow("CUDA", "order.cuda", state.parse_text, tooltip=help_of(o, "cuda"))
            yield FieldRow("PyTorch", "order.pytorch", state.parse_text,
                           tooltip=help_of(o, "pytorch"))
            # A list of packages outgrows its field: it wraps onto more lines, never cut.
            yield WrapRow("Packages", "order.packages", state.parse_words,
                          tooltip=help_of(o, "packages"))
        with Horizontal(id="write-row"):
            # Enter writes and the focus stays: what is typed next is text, not keys.
            yield FieldRow("Folder", "export.folder", state.parse_text, advance=False,
                           tooltip="Folder receiving plan.toml, runs.jsonl and order.toml; "
                                   "Enter writes them")
            yield Button("Write files (w)", id="write", variant="primary", compact=True)
        yield Static("", id="export-message", classes="message", markup=False)
        with TabbedContent(id="preview"):
            for name in (*FILES, REPORT):
                with TabPane(name, id=f"tab-{name.split('.')[0]}"):
                    yield Preview(id=f"text-{name.split('.')[0]}")

    def show(self, ws: Workspace) -> None:
        spec = ws.preset.order
        values = {
            "contact.name": self.planner.contact[0], "contact.email": self.planner.contact[1],
            "order.image": spec.image, "order.cuda": spec.cuda, "order.pytorch": spec.pytorch,
            "order.packages": ", ".join(spec.packages), "export.folder": self.planner.out_dir,
        }
        for row in self.query(FieldRow):
            row.sync(values[row.path])
        message = self.query_one("#export-message", Static)
        try:
            contact = state.contact_of(*self.planner.contact)
        except InputError as exc:
            message.set_class(True, "-error")
            message.update(f"✗ {exc}")
            return
        plan, order = state.exports(ws, self.planner.catalog, contact)
        toml, runs = plan_texts(plan)
        self.query_one("#text-plan", Preview).show_text(toml)
        self.query_one("#text-runs", Preview).show_text(runs)
        self.query_one("#text-order", Preview).show_text(order_toml(order))
        self.query_one("#text-report", Preview).show_text(outline(plan))
        message.set_class(ws.error is not None, "-error")
        if ws.error is not None:
            message.update("✗ the last edit cannot be planned: fix it before writing")
        else:
            status = "ready" if contact else "draft (no contact)"
            message.update(f"Order {status}: {order.cards} × {order.card_name} for "
                           f"{order.duration_days} days, into {self.planner.out_dir}/")

    def edited(self, path: str, value: object) -> None:
        text = str(value)
        if path == "contact.name":
            self.planner.contact = (text, self.planner.contact[1])
        elif path == "contact.email":
            self.planner.contact = (self.planner.contact[0], text)
        elif path == "export.folder":
            self.planner.out_dir = text or "plan"
        else:
            super().edited(path, value)
            return
        self._redraw(self.planner.workspace)

    def on_field_row_submitted(self, message: FieldRow.Submitted) -> None:
        # Enter in the folder field writes, as the button beside it does.
        if message.path == "export.folder":
            self.action_write()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_write()

    def action_focus_preview(self) -> None:
        """Move to the preview, to scroll it."""
        pane = self.query_one(TabbedContent).active
        self.query_one(f"#{pane} TextArea", TextArea).focus()

    def action_write(self) -> None:
        """Write both files, asking before overwriting."""
        ws = self.planner.workspace
        if ws.error is not None:
            self.notify(f"Not written: {ws.error}", severity="error")
            return
        try:
            contact = state.contact_of(*self.planner.contact)
        except InputError as exc:
            self.notify(f"Not written: {exc}", severity="error")
            return
        out = Path(self.planner.out_dir).expanduser()
        existing = [str(out / f) for f in FILES if (out / f).exists()]
        if not existing:
            self._write(out, contact, force=False)
            return

        def answered(yes: bool | None) -> None:
            if yes:
                self._write(out, contact, force=True)
            else:
                self._said("Kept the existing files; nothing written.")

        names = (f"{', '.join(existing[:-1])} and " if existing[:-1] else "") + existing[-1]
        self.app.push_screen(Confirm(f"{names} already exist"
                                     f"{'s' if len(existing) == 1 else ''}. Overwrite?",
                                     yes="Overwrite", no="Keep"), answered)

    def action_save_preset(self) -> None:
        """Write the edited campaign as a preset file into the folder, to plan it again
        later (`campaign-planner --preset FOLDER/preset.toml`)."""
        path = Path(self.planner.out_dir).expanduser() / "preset.toml"
        text = state.preset_toml(self.planner.workspace.preset)

        def write(force: bool | None) -> None:
            if not force and path.exists():
                self._said(f"Kept the existing {path}; nothing written.")
                return
            try:
                write_atomic(path, text, force=bool(force))
            except (InputError, OSError) as exc:
                self.notify(f"Not written: {exc}", severity="error")
                return
            self._said(f"Wrote {path}")

        if path.exists():
            self.app.push_screen(Confirm(f"{path} already exists. Overwrite?",
                                         yes="Overwrite", no="Keep"), write)
        else:
            write(False)

    def action_write_report(self) -> None:
        """Write report.html into the folder and say where; ask first when it would replace
        a report, or stand beside a plan.toml of another plan."""
        ws = self.planner.workspace
        if ws.error is not None:
            self.notify(f"Not written: {ws.error}", severity="error")
            return
        folder = Path(self.planner.out_dir).expanduser()
        path = folder / REPORT
        try:
            contact = state.contact_of(*self.planner.contact)
        except InputError as exc:
            self.notify(f"Not written: {exc}", severity="error")
            return
        plan, _ = state.exports(ws, self.planner.catalog, contact)
        beside = folder / "plan.toml"
        other = plan_there(beside) if beside.exists() else plan_id(plan)
        mismatch = other != plan_id(plan)

        def write(force: bool | None) -> None:
            if force is False or (force is None and path.exists()):
                self._said(f"Kept the existing {path}; nothing written."
                           if path.exists() else "Nothing written.")
                return
            from planner.report.write import render, write_report

            try:
                write_report(path, render(plan, "html"), force=path.exists())
            except (InputError, OSError) as exc:
                self.notify(f"Not written: {exc}", severity="error")
                return
            self._said(f"Wrote {path} of plan {plan_id(plan)}; {beside} beside it is "
                       f"{_named(other)}: w writes this campaign's" if mismatch
                       else f"Wrote {path}")

        if mismatch:
            self.app.push_screen(Confirm(
                f"{beside} is {_named(other)}, not of this campaign's plan "
                f"{plan_id(plan)}: {REPORT} would describe another plan than the one beside it"
                f"{' (and replace the report there)' if path.exists() else ''}. "
                "Write it anyway? (w writes this campaign's plan.toml and order.toml.)",
                yes="Write anyway", no="Keep"), write)
        elif path.exists():
            self.app.push_screen(Confirm(f"{path} already exists. Overwrite?",
                                         yes="Overwrite", no="Keep"), write)
        else:
            write(None)

    def _write(self, out: Path, contact: object, *, force: bool) -> None:
        plan, order = state.exports(self.planner.workspace, self.planner.catalog,
                                    contact)  # type: ignore[arg-type]
        try:
            written = write_exports(out, plan, order, force=force)
        except (InputError, OSError) as exc:
            self.notify(f"Not written: {exc}", severity="error")
            return
        self.planner.exported = self.planner.workspace.revision
        report = out / REPORT
        other = report_there(report) if report.exists() else plan.campaign.id
        self._said(f"Wrote {', '.join(map(str, written[:-1]))} and {written[-1]}" + (
            f"; {report} beside them is {_named(other)}: r writes this plan's"
            if other != plan.campaign.id else ""))

    def _said(self, text: str) -> None:
        """Say what became of the files, on the screen and in a notification."""
        message = self.query_one("#export-message", Static)
        message.set_class(False, "-error")
        message.update(text)
        self.notify(text)

"""A yes/no question in a modal, e.g. before overwriting files."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Static


class Confirm(ModalScreen[bool]):
    """Asks a question; dismisses True for yes, False for no."""

    BINDINGS: ClassVar = [Binding("escape,n", "answer(False)", "No"),
                          Binding("y", "answer(True)", "Yes")]
    DEFAULT_CSS = """
    Confirm { align: center middle; }
    Confirm > Vertical { width: 64; max-width: 100%; height: auto; border: thick $warning;
                         background: $surface; padding: 1 2; }
    Confirm #question { height: auto; }
    Confirm Horizontal { height: auto; margin-top: 1; align-horizontal: right; }
    Confirm Button { margin-left: 2; }
    """

    def __init__(self, question: str, yes: str = "Yes", no: str = "No") -> None:
        super().__init__()
        self.question = question
        self.labels = (yes, no)

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static(self.question, id="question", markup=False)
            with Horizontal():
                yield Button(f"{self.labels[1]} (n)", id="no", compact=True)
                yield Button(f"{self.labels[0]} (y)", id="yes", variant="warning",
                             compact=True)

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        """Close with the answer."""
        self.dismiss(yes)

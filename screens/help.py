"""Help screen: the screens, the keys, and how an edit becomes a plan."""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Markdown

HELP = """\
# campaign-planner

Plan what fits in a GPU rental window before you order it. Every edit replans at once;
the line under the screen names shows the plan's headline, or, in red, why the last edit
cannot be planned (the last good plan stays on screen until you fix it).

## Screens

- **1 Campaign**: the window (**d** 3 days, **w** 7 days, **m** 30 days, or custom hours),
  the cards, the card model (Enter or a click), the kind, the price, the reserved time.
- **2 Workload**: the matrix: baseline factors, variants (**a** add, **e** edit, **x**
  remove), seeds, steps, evaluation, checkpoints, effective batch; or the embedding
  corpus and its fixed settings.
- **3 Fit**: runs that fit, the variant × seed table, the per-card timeline (hover a bar
  to name its run), memory bars, what does not fit and why, warnings, provenance
  (**t**, **m**, **n** jump to sections).
- **4 Measure**: measure step time and peak memory here (**m**, **c** cancels);
  the results flow into the plan.
- **5 Compare**: the same campaign on other card models, side by side.
- **6 Export**: the order's contact and environment, a preview of both files, and
  **w** to write plan.toml and order.toml.

## Keys

- **1**–**6** switch screens (also a click on the bar at the top)
- **Tab** / **Shift+Tab** move between fields; **Escape** leaves a field so single keys work
- **ctrl+z** undoes the last edit; **ctrl+p** opens the command palette (open a shipped
  preset, change window or card, go to a screen); **ctrl+q** quits
- **F1** or **?** shows this help; **Escape** closes it

## Rules the planner keeps

- A variant changes exactly one factor of the kept baseline. One that changes two is
  flagged at once; give it a waive reason to accept it with a warning.
- Every variant keeps the effective batch (micro-batch × accumulation × cards per run);
  a variant too big for the card gets a smaller micro-batch and more accumulation, and
  the plan documents it.
- Files are written atomically, and never over existing ones without your yes.

The same plan is available headless: `campaign-planner --preset NAME --out DIR`.
"""


class HelpScreen(ModalScreen[None]):
    """What each screen and key does."""

    BINDINGS: ClassVar = [Binding("escape,q,f1", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 96; max-width: 100%; height: 100%;
                                  border: thick $accent; background: $surface; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Markdown(HELP)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

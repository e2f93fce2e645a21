"""Help screen: the screens, the keys, and how an edit becomes a plan."""

from __future__ import annotations

import re
from typing import ClassVar

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Footer, Static

INTRO = ("Plan what fits in a GPU rental window before you order it. Every edit replans at "
         "once; the line under the screen names shows the plan's headline or, in red, why the "
         "last edit cannot be planned (the last good plan stays on screen until you fix it).")

SCREENS = (
    ("1 Campaign", "the window (*d* 3 days, *w* 7 days, *m* 30 days, or custom hours), the "
                   "cards, the card model (Enter or a click), the kind, price, reserved time"),
    ("2 Workload", "the matrix: baseline factors, variants (*a* add, *e* edit, *x* remove), "
                   "seeds, steps, evaluation, checkpoints, effective batch; or the embedding "
                   "corpus and its fixed settings"),
    ("3 Fit", "runs that fit, the variant × seed table, the per-card timeline (hover a bar to "
              "name its run), memory bars, what does not fit and why, warnings, provenance "
              "(*t*, *m*, *n* jump to sections)"),
    ("4 Measure", "measure step time and peak memory here (*m*; *c* cancels); the results "
                  "flow into the plan (*r* goes back to the preset's figures)"),
    ("5 Compare", "the same campaign on other card models; Enter plans on the one selected"),
    ("6 Export", "the order's contact and environment, a preview of both files, and *w* (or "
                 "Enter in the folder) to write plan.toml and order.toml (asks before "
                 "overwriting)"),
    ("7 Advise", "every card model × count × window planned; the orders that meet the goal, "
                 "cheapest first, with the frontier and the closest orders; Enter (in a field "
                 "too), the Adopt button or the palette's Adopt plans on the highlighted one"),
)

KEYS = (
    ("1–7", "switch screens (or click the bar at the top; F2–F8 work in fields)"),
    ("Tab", "next field; *Escape* leaves a field so single keys work again"),
    ("ctrl+z", "undo the last edit"),
    ("ctrl+p", "command palette: open a shipped preset, change window or card, go to a "
               "screen, adopt the order highlighted in Advise"),
    ("t on Fit", "the timeline: *+*/*−* zoom, *[* *]* pan, arrows move the cursor from run to "
                 "run (its id, hours and figures below), *0* the whole window"),
    ("F1 or ?", "this help; *Escape* closes it"),
    ("ctrl+q", "quit (asks first when edits were not written)"),
)

RULES = (
    "A variant changes exactly one factor of the kept baseline. One that changes two is "
    "flagged at once; give it a waive reason to accept it with a warning.",
    "Every variant keeps the effective batch (micro-batch × accumulation × cards per run); a "
    "variant too big for the card gets a smaller micro-batch and more accumulation, and the "
    "plan documents it.",
    "Files are written atomically, and never over existing ones without your yes.",
)

HEADLESS = "The same plan headless: *campaign-planner --preset NAME --out DIR*"


def words(text: str) -> Text:
    """Text with `*key*` words in bold."""
    return Text.from_markup(re.sub(r"\*(.+?)\*", r"[b]\1[/b]", text.replace("[", r"\[")))


def _title(text: str) -> Text:
    return Text(text, style="bold orange1")


def _pairs(items: tuple[tuple[str, str], ...]) -> Table:
    """Names in a column of their own, descriptions wrapping beside them."""
    grid = Table.grid(padding=(0, 2, 0, 2))
    grid.add_column(no_wrap=True, style="bold")
    grid.add_column(ratio=1)
    for name, text in items:
        grid.add_row(name, words(text))
    return grid


def _bullets(items: tuple[str, ...]) -> Table:
    grid = Table.grid(padding=(0, 1, 0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column(ratio=1)
    for text in items:
        grid.add_row("-", words(text))
    return grid


def help_page() -> Group:
    """The help text; paragraphs and descriptions wrap to the width of the window."""
    return Group(
        _title("campaign-planner"), Text(), Text(INTRO), Text(),
        _title("Screens"), Text(), _pairs(SCREENS), Text(),
        _title("Keys"), Text(), _pairs(KEYS), Text(),
        _title("Rules the planner keeps"), Text(), _bullets(RULES), Text(),
        words(HEADLESS),
    )


class HelpScreen(ModalScreen[None]):
    """What each screen and key does."""

    BINDINGS: ClassVar = [Binding("escape,q,f1", "dismiss", "Close")]
    DEFAULT_CSS = """
    HelpScreen { align: center middle; }
    HelpScreen > VerticalScroll { width: 94; max-width: 100%; height: 100%;
                                  border: thick $accent; background: $surface;
                                  padding: 0 1; }
    """

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Static(help_page(), id="help-text")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(VerticalScroll).focus()

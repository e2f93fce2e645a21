"""Filling a DataTable whose columns fit what it holds now.

A DataTable's auto-width columns only ever grow, and a fill right after a clear can be
drawn with the old widths: a table refilled on every edit (after an undo, say) would keep
a column as wide as its widest cell ever. Here every fill measures its own cells and sets
each column's width once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import DataTable


def width_of(cell: Any) -> int:
    """Cells a table cell takes on one line."""
    text = cell.plain if isinstance(cell, Text) else str(cell)
    return max((cell_len(line) for line in text.splitlines()), default=0)


def fill(table: DataTable[Any], headers: Sequence[str], rows: Sequence[Sequence[Any]],
         keys: Sequence[str] | None = None) -> None:
    """Replace `table`'s columns and rows; each column as wide as its widest cell."""
    row = table.cursor_row
    table.clear(columns=True)
    for i, header in enumerate(headers):
        table.add_column(header, width=max([width_of(header),
                                            *(width_of(r[i]) for r in rows)]))
    for i, cells in enumerate(rows):
        table.add_row(*cells, key=keys[i] if keys else None)
    if table.row_count:
        table.move_cursor(row=min(max(row, 0), table.row_count - 1))

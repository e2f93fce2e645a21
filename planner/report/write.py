"""Writing a report: the format from the flag or the file's name, the libraries it needs,
and the atomic write that never replaces a file without being told to."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from planner.errors import InputError
from planner.planfile.plan import Plan
from planner.tomlio import write_bytes_atomic

if TYPE_CHECKING:
    from planner.report.actual import Actual

Format = Literal["html", "svg", "png"]
FORMATS: tuple[Format, ...] = ("html", "svg", "png")
NEEDS = {"html": "plotly", "svg": "matplotlib", "png": "matplotlib"}
"""The library each format is drawn with (both in the `report` extra)."""


def format_of(out: str | None, fmt: str | None) -> Format:
    """The format asked for, or the one the output's name ends with (html by default)."""
    suffix = Path(out).suffix.lower().lstrip(".") if out else ""
    if fmt is not None and fmt not in FORMATS:
        raise InputError(f"must be one of {', '.join(FORMATS)}", field="--format")
    if fmt is not None and suffix in FORMATS and suffix != fmt:
        raise InputError(f"names a .{suffix} file but --format is {fmt}", field="--out")
    chosen = fmt or (suffix if suffix in FORMATS else "html")
    return chosen  # type: ignore[return-value]


def need_library(fmt: Format) -> None:
    """Refuse, in one line, a format whose library is not installed."""
    name = NEEDS[fmt]
    if importlib.util.find_spec(name) is None:
        raise InputError(f"a {fmt} report needs {name}: pip install "
                         "'campaign-planner[report]'", field="--format")


def render(plan: Plan, fmt: Format, actual: Actual | None = None) -> bytes:
    """The report's bytes in `fmt` (the static image is the Gantt alone)."""
    need_library(fmt)
    if fmt == "html":
        from planner.report.page import report_html

        return report_html(plan, actual).encode()
    from planner.report.static import gantt_image

    return gantt_image(plan, fmt)


def write_report(path: str | Path, data: bytes, *, force: bool = False) -> Path:
    """Write the report atomically; an existing file is replaced only with `force`."""
    p = Path(path).expanduser()
    if p.is_dir():
        raise InputError("is a folder; name the report's file", file=p, field="--out")
    if p.exists() and not force:
        raise InputError("already exists; pass --force to overwrite it", file=p, field="--out")
    p.parent.mkdir(parents=True, exist_ok=True)
    write_bytes_atomic(p, data)
    return p

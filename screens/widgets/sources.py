"""Long cells shortened rather than cut: a figure's source (`scaled from NVIDIA RTX A6000
(…)`) too wide for its column becomes its kind and a mark (`scaled¹`), and a legend line
under the table gives it in full."""

from __future__ import annotations

from collections.abc import Iterable

from rich.cells import cell_len

_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def mark(n: int) -> str:
    """The n-th legend mark: ¹, ², … ¹⁰."""
    return str(n).translate(_SUPERSCRIPT)


def shorten(texts: Iterable[str], room: int) -> tuple[dict[str, str], list[str]]:
    """(shown form of each text, legend lines): texts of at most `room` cells as they are;
    longer ones as their first word and a mark, each mark explained once in the legend."""
    short: dict[str, str] = {}
    legend: list[str] = []
    for text in texts:
        if text in short:
            continue
        if cell_len(text) <= room:
            short[text] = text
            continue
        legend.append(f"{mark(len(legend) + 1)} {text}")
        short[text] = f"{text.split(' ', 1)[0]}{mark(len(legend))}"
    return short, legend

"""One colour per variant (or version), the same in every chart and in the static image."""

from __future__ import annotations

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#7f7f7f", "#bcbd22", "#17becf", "#393b79", "#637939", "#8c6d31", "#843c39",
           "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")
"""Colours with white text readable on each (a category palette, then darker tones)."""


def colour_of(groups: list[str]) -> dict[str, str]:
    """Each group's colour, by its place in the legend; the palette repeats past its end."""
    return {g: PALETTE[i % len(PALETTE)] for i, g in enumerate(groups)}

"""Progress of a measurement, reported to whoever runs it (a progress bar, a screen)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class MeasureProgress:
    """`done` of `total` units of work; `label` says what runs now (e.g. `alibi: step 3/10`)."""

    done: int
    total: int
    label: str

    @property
    def fraction(self) -> float:
        """Share done, 0 to 1."""
        return self.done / self.total if self.total else 1.0

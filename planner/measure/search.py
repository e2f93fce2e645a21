"""The largest micro-batch that fits: grow, then bisect, recovering from out-of-memory.

Torch-free: a candidate is judged by a `peak(micro_batch)` function — a steady-state probe
on CUDA under a per-process memory cap at the budget (`planner.measure.probe`), or the
fake-tensor estimate — that returns GiB, None for an out-of-memory error it recovered from
itself, or raises one of the out-of-memory errors it is given. A raised one is recovered from
(`recover`) after its handler has exited — inside it the traceback still holds the failed
step's tensors — and counts as "does not fit"; the search goes on.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Search:
    """The outcome: the largest fitting micro-batch, and what was tried."""

    largest: int = 0
    limit: int = 0
    tried: list[tuple[int, float | None]] = field(default_factory=list)
    """(micro-batch, peak GiB or None for an out-of-memory error), in order."""
    recoveries: int = 0

    def peak_at(self, micro_batch: int) -> float | None:
        """The peak measured at a micro-batch, if it was tried and fitted in memory."""
        for m, p in self.tried:
            if m == micro_batch and p is not None:
                return p
        return None

    def per_sample(self) -> float | None:
        """Peak growth per sample, from the two largest candidates that ran."""
        ran = sorted({m: p for m, p in self.tried if p is not None}.items())
        if len(ran) < 2:
            return None
        (m1, p1), (m2, p2) = ran[-2], ran[-1]
        return max((p2 - p1) / (m2 - m1), 0.0)


def largest_micro_batch(peak: Callable[[int], float | None], budget_gib: float, *,
                        start: int,
                        limit: int, oom_errors: tuple[type[BaseException], ...] = (),
                        recover: Callable[[], None] = lambda: None,
                        stop: Callable[[], bool] = lambda: False) -> Search:
    """Largest m in [1, limit] with peak(m) <= budget_gib, assuming the peak grows with m.

    Starts at `start`; doubles while it fits (up to `limit`), then bisects between the last
    fit and the first miss. `stop` ends the search early (cancellation).
    """
    out = Search(limit=limit)

    def judged(m: int) -> tuple[float | None, bool]:
        try:
            return peak(m), False
        except oom_errors:
            return None, True

    def fits(m: int) -> bool:
        p, raised = judged(m)
        if p is None:
            out.recoveries += 1
            if raised:
                recover()
        out.tried.append((m, p))
        return p is not None and p <= budget_gib

    lo, hi = 0, limit + 1
    m = max(1, min(start, limit))
    while not stop():
        if fits(m):
            lo = m
            if hi == limit + 1:
                if m >= limit:
                    break
                m = min(2 * m, limit)
                continue
        else:
            hi = m
        if hi - lo <= 1:
            break
        m = (lo + hi) // 2
    out.largest = lo
    return out


def choose(largest: int, micro_batch: int, accumulation: int) -> tuple[int, int] | None:
    """Micro-batch × accumulation keeping the per-card batch: the largest divisor of
    micro_batch × accumulation not above `largest` nor the preset's micro-batch."""
    per_card = micro_batch * accumulation
    for m in range(min(largest, micro_batch), 0, -1):
        if per_card % m == 0:
            return m, per_card // m
    return None

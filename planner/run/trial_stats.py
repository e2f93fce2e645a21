"""Step times from the progress a trialled command reported: pure arithmetic on samples.

A sample is a step the command reported and when it wrote it (the progress file's time).
Samples reported with `warmup: true` are never timed, nor the first `skip` steps after
the last of them (the first steps of a script that does not say: compilation, autotuning,
caches filling). The first sample past both is the timed part's start; each later sample
closes an interval of whole steps, each step of which took the interval's time over its
steps. Process start-up never enters the timing: the first interval begins at a report.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from planner.spec import bounds


@dataclass(frozen=True)
class Sample:
    """One report: the step reached, when it was written, and whether it was warm-up."""

    t: float
    step: int
    warmup: bool = False


@dataclass(frozen=True)
class Timing:
    """The timed steps of one configuration's trial, and what came before them."""

    median_s: float
    p10_s: float
    p90_s: float
    steps: int
    """Steps timed."""
    startup_s: float
    """From the process's start to its first report."""
    warmup_s: float
    """From the first report to the start of the timed steps."""
    warmup_steps: int
    """Steps done before the timed ones."""
    overhead_s: float
    """Time to the timed part less its steps at the median: what a run pays once."""


def timed_start(samples: Sequence[Sample], skip: int) -> int | None:
    """Index of the sample the timed part starts at, or None while there is none yet."""
    first: int | None = None
    for i, s in enumerate(samples):
        if s.warmup:
            first = None
            continue
        if first is None:
            first = s.step
        if s.step >= first + skip:
            return i
    return None


def intervals(samples: Sequence[Sample], skip: int) -> list[tuple[float, int]]:
    """(seconds per step, steps) of each timed interval. Reports written within the same
    clock tick are merged into the next interval rather than timed as zero."""
    start = timed_start(samples, skip)
    if start is None:
        return []
    out: list[tuple[float, int]] = []
    ref = samples[start]
    for s in samples[start + 1:]:
        if s.warmup or s.step < ref.step:
            break  # a script that went back to warm-up or restarted: time no further
        steps, seconds = s.step - ref.step, s.t - ref.t
        if steps <= 0 or seconds <= 0:
            continue
        out.append((seconds / steps, steps))
        ref = s
    return out


def timed_steps(samples: Sequence[Sample], skip: int) -> int:
    """How many steps are timed so far."""
    return sum(n for _, n in intervals(samples, skip))


def percentile(values: Sequence[tuple[float, int]], q: float) -> float:
    """The q-th percentile (0 to 100) of values each repeated its count, interpolated
    linearly between neighbours as numpy's default does."""
    ordered = sorted(v for v in values if v[1] > 0)
    total = sum(n for _, n in ordered)
    if total == 0:
        raise ValueError("no values")
    pos = (total - 1) * q / 100.0
    lo, frac = math.floor(pos), pos - math.floor(pos)

    def at(k: int) -> float:
        seen = 0
        for value, n in ordered:
            seen += n
            if k < seen:
                return value
        return ordered[-1][0]

    low = at(lo)
    return low if frac == 0 else low + (at(lo + 1) - low) * frac


def timing(samples: Sequence[Sample], started: float, skip: int) -> Timing | None:
    """The timing of a trial whose process started at `started` (same clock as the
    samples), or None when no step was timed."""
    steps = intervals(samples, skip)
    if not steps:
        return None
    start = timed_start(samples, skip)
    assert start is not None
    ref, first = samples[start], samples[0]
    median = percentile(steps, 50)
    return Timing(median_s=median, p10_s=percentile(steps, 10), p90_s=percentile(steps, 90),
                  steps=sum(n for _, n in steps),
                  startup_s=max(0.0, first.t - started), warmup_s=max(0.0, ref.t - first.t),
                  warmup_steps=ref.step,
                  overhead_s=max(0.0, ref.t - started - ref.step * median))


def plausible(t: Timing) -> bool:
    """Whether a timing is one a file may hold: no time beyond any real step (a progress
    file whose time was set far ahead), no count beyond any real run's."""
    seconds = (t.median_s, t.p10_s, t.p90_s, t.startup_s, t.warmup_s, t.overhead_s)
    return max(seconds) <= bounds.MEASURED_SECONDS and max(t.steps, t.warmup_steps) \
        <= bounds.STEPS

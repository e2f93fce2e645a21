"""Steps on a device from a clean slate: probes for the batch search, and the timed run.

Three rules make the figures those of a run, not of the search (see `backend`):

1. **A clean slate** before each probe and before the timed run: gradients set to None,
   optimizer state dropped, `gc.collect()`, `empty_cache()`, peaks and counters reset.
2. **Recovery after the `except` block, never inside it**: while a handler runs, the
   exception's traceback keeps the failed step's frames — and their activations — alive,
   so nothing could be released there. `ran` returns from the handler first.
3. **Steady state only**: a probe runs a throwaway step (it creates the optimizer state the
   way a run's first step does, and leaves the cache a run's later steps reuse), then the
   step it counts. The timed run counts each step's own peak and retries, and discards a
   step that ran out of memory; after one it starts over from a clean slate and runs one
   untimed step, so the steps timed after the recovery peak as a clean run's do.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from planner.measure.backend import Backend, Peak
from planner.measure.workloads import Batch, Workload

T = TypeVar("T", Workload, Batch)


def clear(w: Workload) -> None:
    """Drop what steps left behind: gradients and the optimizer's state."""
    if w.optimizer is not None:
        w.optimizer.zero_grad(set_to_none=True)
        w.optimizer.state.clear()
    for p in w.model.parameters():
        p.grad = None


def ran(fn: Callable[[], object], errors: tuple[type[BaseException], ...]) -> bool:
    """Call `fn`; False when it ran out of memory. Returns from the handler at once, so the
    caller's recovery runs with the traceback (and the failed step's tensors) released."""
    try:
        fn()
    except errors:
        return False
    return True


def made(b: Backend, make: Callable[[], T]) -> T | None:
    """`make()`, retried once from a clean slate after an out-of-memory error; None when
    it runs out of memory twice."""
    box: list[T] = []
    for _ in range(2):
        if ran(lambda: box.append(make()), b.oom_errors):
            return box[0]
        b.clean_slate()
    return None


def fresh(b: Backend, w: Workload | None) -> None:
    """The clean slate: no gradients, no optimizer state, an empty cache, new statistics."""
    if w is not None:
        clear(w)
    b.clean_slate()


def probe(b: Backend, w: Workload, step_at: Callable[[], Callable[[], None]]) -> float | None:
    """Reserved GiB at the peak of a steady-state step, or None when it ran out of memory.

    `step_at()` makes the step's inputs and returns the step; a throwaway step runs first,
    then the counted one."""
    fresh(b, w)
    holder: list[Callable[[], None]] = []
    ok = ran(lambda: holder.append(step_at()), b.oom_errors)
    ok = ok and ran(holder[0], b.oom_errors)
    if ok:
        b.reset_peak()
        ok = ran(holder[0], b.oom_errors)
    got = b.peak() if ok else None
    holder.clear()  # the next probe (or the timed run) starts from its own clean slate
    return got.reserved_gib if got is not None else None


@dataclass
class Timed:
    """A timed run: seconds per kept step and their peak and retries."""

    times: list[float] = field(default_factory=list)
    peak: Peak | None = None
    retries: int = 0
    discarded: int = 0
    """Steps that ran out of memory: recovered from, not timed."""


class OutOfMemory(Exception):
    """Two steps in a row ran out of memory: the configuration cannot run here."""


def timed_run(b: Backend, w: Workload | None, step: Callable[[], None], warmup: int,
              steps: int, stop: Callable[[], bool], tick: Callable[[str], None]) -> Timed:
    """`warmup` throwaway steps (at least one on a device with statistics), then `steps`
    timed ones. Each timed step's peak and retries are its own: the peak is reset before
    it, retries are counted as a difference across it."""
    out = Timed()
    in_a_row = 0

    def attempt() -> float | None:
        nonlocal in_a_row
        box: list[float] = []
        if ran(lambda: box.append(b.time(step)), b.oom_errors):
            in_a_row = 0
            return box[0]
        # Outside the handler now. The recovery empties the cache, so later steps would find
        # another layout than a run's: start over as a fresh process does (no gradients, no
        # optimizer state), and the caller runs one clean untimed step before timing again.
        fresh(b, w)
        in_a_row += 1
        out.discarded += 1
        if in_a_row > 1:
            raise OutOfMemory
        return None

    for i in range(max(warmup, 1 if b.kind == "cuda" else 0)):
        if stop():
            return out
        while attempt() is None:
            pass
        tick(f"warm-up {i + 1}/{warmup}")
    while len(out.times) < steps and not stop():
        b.reset_peak()
        before = b.retries()
        seconds = attempt()
        if seconds is None:
            while attempt() is None:  # the clean step; twice in a row raises
                pass
            continue
        got = b.peak()
        if got is not None:
            out.retries += got.retries - before
            if out.peak is None or got.reserved_gib > out.peak.reserved_gib:
                out.peak = got
        out.times.append(seconds)
        tick(f"step {len(out.times)}/{steps}")
    return out

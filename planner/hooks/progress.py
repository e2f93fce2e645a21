"""The progress file a run writes: its step, peak memory, warm-up and last checkpoint, at
most every few seconds, each write whole.

Writes are cheap (a few dozen bytes, no sync: a lost write is only a late sample), and a
failing one never stops training: it is said once on standard error and dropped.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable

from planner.hooks import env
from planner.hooks.files import replace_bytes, warn

EVERY_S = 5.0
"""Seconds between two writes of the progress file, unless something must be said now."""


def peak_memory_bytes() -> int | None:
    """The peak memory torch allocated on the current CUDA device, when the script has
    imported torch and started CUDA (this never imports either)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    try:
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            return int(torch.cuda.max_memory_allocated())
    except Exception:  # a broken driver must not stop training over a figure
        return None
    return None


class ProgressFile:
    """Reports to `CAMPAIGN_PROGRESS`; with no path (a script run by hand) it keeps nothing."""

    def __init__(self, path: str | None, every: float = EVERY_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.path, self.every, self.clock = path, every, clock
        self.step: int | None = None
        self.warmup = False
        self.checkpoint_step: int | None = None
        self.written: float = -math.inf
        self.pending = False
        self.broken = False

    def report(self, step: int, *, warmup: bool = False, now: bool = False) -> None:
        """Note `step`; written when `every` seconds passed since the last write, or `now`."""
        self.step, self.warmup, self.pending = step, warmup, True
        if now or self.clock() - self.written >= self.every:
            self.flush()

    def checkpointed(self, step: int) -> None:
        """The checkpoint of `step` is at the resume path: said at once."""
        self.checkpoint_step = step
        if self.step is None or self.step < step:
            self.step = step
        self.pending = True
        self.flush()

    def flush(self) -> None:
        """Write what is noted and not yet written."""
        if not self.pending or self.path is None or self.step is None or self.broken:
            return
        data: dict[str, object] = {env.STEP: self.step}
        if self.warmup:
            data[env.WARMUP] = True
        peak = peak_memory_bytes()
        if peak is not None:
            data[env.PEAK_MEMORY] = peak
        if self.checkpoint_step is not None:
            data[env.CHECKPOINT_STEP] = self.checkpoint_step
        try:
            replace_bytes(self.path, json.dumps(data).encode())
        except OSError as exc:
            self.broken = True
            warn(f"cannot write the progress file {self.path} ({exc.strerror or exc}); "
                 "training goes on without reporting its steps")
            return
        self.written = self.clock()
        self.pending = False

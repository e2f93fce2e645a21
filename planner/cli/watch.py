"""`status --watch`: the same view, redrawn in place until Ctrl-C."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

HOME_CLEAR = "\x1b[H\x1b[2J"
"""Cursor home, then clear the screen: each refresh replaces the last."""


def watch(show: Callable[[], str], every: float, *, out: TextIO | None = None,
          rounds: int | None = None, wait: Callable[[float], None] = time.sleep) -> int:
    """Print `show()` every `every` seconds, in place; `rounds` bounds the refreshes."""
    out = out or sys.stdout
    done = 0
    try:
        while rounds is None or done < rounds:
            text = show()
            out.write(f"{HOME_CLEAR}{text}\n\n(refreshing every {every:g} s; Ctrl-C to stop)\n")
            out.flush()
            done += 1
            if rounds is None or done < rounds:
                wait(every)
    except KeyboardInterrupt:
        out.write("\n")
    return 0

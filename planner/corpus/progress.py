"""A one-line progress bar on stderr, redrawn in place on a terminal and printed as a plain
line every so often when stderr is a file."""

from __future__ import annotations

import sys
import time
from typing import TextIO

import humanize

BAR = 24


class Progress:
    """Progress of `total` units (None when unknown); `update` is cheap to call often."""

    def __init__(self, title: str, total: int | None, unit: str = "docs",
                 stream: TextIO | None = None, every_s: float | None = None) -> None:
        self.title, self.total, self.unit = title, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self.every_s = every_s if every_s is not None else (0.2 if self.tty else 30.0)
        self.start = time.monotonic()
        # The first line waits one interval: a scan that ends (or fails) sooner shows none,
        # and an error is never preceded by a progress line of the work it stopped.
        self._last = self.start
        self._width = 0
        self._shown: int | None = None

    def update(self, done: int, extra: str = "", *, force: bool = False) -> None:
        """Show `done` units so far, with `extra` text after the rate."""
        now = time.monotonic()
        if not force and now - self._last < self.every_s:
            return
        if force and not self.tty and self._shown == done:
            return
        self._last = now
        self._shown = done
        elapsed = max(now - self.start, 1e-9)
        rate = done / elapsed
        parts = [self.title]
        if self.total:
            frac = min(1.0, done / self.total)
            fill = round(frac * BAR)
            parts.append(f"{frac:4.0%} ▕{'█' * fill}{' ' * (BAR - fill)}▏")
            parts.append(f"{done:,}/{self.total:,} {self.unit}")
        else:
            parts.append(f"{done:,} {self.unit}")
        parts.append(f"{rate:,.0f} {self.unit}/s")
        if extra:
            parts.append(extra)
        if self.total and rate > 0 and done < self.total:
            left = (self.total - done) / rate
            parts.append(f"eta {humanize.naturaldelta(left)}")
        line = " · ".join(parts)
        if self.tty:
            pad = max(0, self._width - len(line))
            self.stream.write("\r" + line + " " * pad)
            self._width = len(line)
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def clear(self) -> None:
        """Take a line drawn in place off the terminal (before an error is printed)."""
        if self.tty and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0

    def close(self, done: int, extra: str = "") -> None:
        """Final figures, then a newline on a terminal."""
        self.update(done, extra, force=True)
        if self.tty:
            self.stream.write("\n")
            self.stream.flush()

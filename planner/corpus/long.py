"""One JSON Lines record read without loading it: for lines too long to hold whole.

Reads the object byte by byte through a small buffer, keeps the id and only the first
characters of the text (as many as the scan will tokenize), and skips everything else, so
a record of any length costs a few megabytes. Structure is checked as it is read; what is
kept is decoded by `json` itself.
"""

from __future__ import annotations

import json
import re
from typing import IO, Any

CHUNK = 1 << 20
WS = b" \t\r"


class _Bytes:
    """A forward-only view of a binary file with a small buffer."""

    def __init__(self, fh: IO[bytes]) -> None:
        self.fh, self.buf, self.i, self.used = fh, b"", 0, 0

    def peek(self) -> int:
        if self.i >= len(self.buf):
            self.used += len(self.buf)
            self.buf, self.i = self.fh.read(CHUNK), 0
            if not self.buf:
                return -1
        return self.buf[self.i]

    def take(self) -> int:
        c = self.peek()
        self.i += 1
        return c

    def skip_ws(self) -> int:
        while (c := self.peek()) != -1 and c in WS:
            self.i += 1
        return c

    @property
    def consumed(self) -> int:
        return self.used + self.i


class LongRecordError(ValueError):
    """The line is not one JSON object."""


_IN_STRING = re.compile(rb'["\\\n]')
_IN_CONTAINER = re.compile(rb'["{}\[\]\n]')


def _string(r: _Bytes, keep: int) -> bytes:
    """The raw bytes of a string after its opening quote, the first `keep` of them kept.
    Runs of plain bytes are skipped a buffer at a time."""
    kept = bytearray()
    while True:
        if r.peek() == -1:
            raise LongRecordError("a string is not closed")
        m = _IN_STRING.search(r.buf, r.i)
        end = m.start() if m else len(r.buf)
        if len(kept) < keep:
            kept += r.buf[r.i:min(end, r.i + keep - len(kept))]
        r.i = end
        if m is None:
            continue
        c = r.take()
        if c == 0x22:  # the closing quote
            return bytes(kept)
        if c == 0x0A:
            raise LongRecordError("a string is not closed")
        escaped = r.take()  # after a backslash: never the end of the string
        if escaped in (-1, 0x0A):
            raise LongRecordError("a string is not closed")
        if len(kept) < keep:
            kept += bytes((c, escaped))


def _safe_end(raw: bytes) -> int:
    """Where a cut-off string can end without splitting an escape."""
    i = safe = 0
    while i < len(raw):
        width = (6 if raw[i + 1:i + 2] == b"u" else 2) if raw[i] == 0x5C else 1
        if i + width > len(raw):
            break
        i += width
        safe = i
    return safe


def _decode(raw: bytes, complete: bool) -> str:
    if not complete:  # cut at a safe place: no half escape, no half character
        raw = raw[:_safe_end(raw)]
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(raw) - 3:
                raise LongRecordError("not UTF-8 text") from None
            raw = raw[:exc.start]
    try:
        text = json.loads(b'"' + raw + b'"')
    except ValueError:
        raise LongRecordError("a string is not valid JSON") from None
    if not complete and text and "\ud800" <= text[-1] <= "\udbff":
        text = text[:-1]  # half of a pair cut off
    return str(text)


def _skip(r: _Bytes) -> bytes:
    """Skip one value; a scalar's bytes are returned (bounded), containers' are not."""
    c = r.skip_ws()
    if c == 0x22:
        r.take()
        _string(r, 0)
        return b""
    if c in (0x7B, 0x5B):  # { [
        depth = 0
        while True:
            if r.peek() == -1:
                raise LongRecordError("an object or array is not closed")
            m = _IN_CONTAINER.search(r.buf, r.i)
            if m is None:
                r.i = len(r.buf)
                continue
            r.i = m.start()
            c = r.take()
            if c == 0x0A:
                raise LongRecordError("an object or array is not closed")
            if c == 0x22:
                _string(r, 0)
            elif c in (0x7B, 0x5B):
                depth += 1
            else:
                depth -= 1
                if depth == 0:
                    return b""
    token = bytearray()
    while (c := r.peek()) != -1 and c not in b",}] \t\r\n":
        r.take()
        if len(token) < 64:
            token.append(c)
    return bytes(token)


def read_long(fh: IO[bytes], id_field: str, text_field: str,
              max_chars: int) -> tuple[dict[str, Any], int]:
    """(the record's id and text prefix, bytes the line took, newline included), reading
    from the start of the line."""
    r = _Bytes(fh)
    row: dict[str, Any] = {}
    if r.skip_ws() != 0x7B:
        raise LongRecordError("expected a JSON object")
    r.take()
    while True:
        c = r.skip_ws()
        if c == 0x7D:
            r.take()
            break
        if c != 0x22:
            raise LongRecordError("expected a key")
        r.take()
        key = _decode(_string(r, 1 << 12), True)
        if r.skip_ws() != 0x3A:
            raise LongRecordError("expected `:` after a key")
        r.take()
        c = r.skip_ws()
        if key in (id_field, text_field) and c == 0x22:
            r.take()
            keep = max_chars * 6 if key == text_field else 1 << 12
            raw = _string(r, keep + 1)
            row[key] = _decode(raw[:keep], len(raw) <= keep)[:max_chars]
        elif key == id_field:
            token = _skip(r)
            try:
                row[key] = json.loads(token) if token else {}
            except ValueError:
                raise LongRecordError("the id is not valid JSON") from None
        else:
            _skip(r)
        c = r.skip_ws()
        if c == 0x2C:
            r.take()
        elif c != 0x7D:
            raise LongRecordError("expected `,` or `}`")
    c = r.skip_ws()
    if c not in (-1, 0x0A):
        raise LongRecordError("more after the object")
    if c == 0x0A:
        r.take()
    return row, r.consumed

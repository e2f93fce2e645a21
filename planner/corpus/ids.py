"""Duplicate-id detection in bounded memory.

Each id is reduced to a 64-bit digest and filed, with the record's line and offset, into one
of 64 partitions by the digest's low bits. Partitions stay in memory while the corpus is
small and spill to temporary files when it is not; the check then takes one partition at a
time, so memory grows with 1/64 of the corpus. A digest seen twice is confirmed by reading
both ids back from the corpus, so a hash collision can never be reported as a duplicate.
"""

from __future__ import annotations

import hashlib
import tempfile
from array import array
from pathlib import Path

from planner.corpus.records import read_at
from planner.errors import InputError

PARTITIONS = 64
SPILL_AT = 1 << 20


def digest(rid: str) -> int:
    """64-bit digest of an id."""
    return int.from_bytes(hashlib.blake2b(rid.encode(), digest_size=8).digest(), "little")


class IdCheck:
    """Collects ids as the corpus streams by; `finish` raises on the first duplicate."""

    def __init__(self, corpus: Path, id_field: str, text_field: str) -> None:
        self.corpus, self.id_field, self.text_field = corpus, id_field, text_field
        self._buf = [array("Q") for _ in range(PARTITIONS)]
        self._buffered = 0
        self._dir: tempfile.TemporaryDirectory[str] | None = None

    def add(self, rid: str, line: int, offset: int) -> None:
        """File one id."""
        d = digest(rid)
        self._buf[d & (PARTITIONS - 1)].extend((d, line, offset))
        self._buffered += 1
        if self._buffered >= SPILL_AT:
            self._spill()

    def _spill(self) -> None:
        if self._dir is None:
            self._dir = tempfile.TemporaryDirectory(prefix="campaign-planner-ids-")
        for i, buf in enumerate(self._buf):
            if buf:
                with open(Path(self._dir.name) / f"{i:02d}", "ab") as fh:
                    buf.tofile(fh)
                self._buf[i] = array("Q")
        self._buffered = 0

    def _partition(self, i: int) -> array[int]:
        out = array("Q")
        if self._dir is not None:
            path = Path(self._dir.name) / f"{i:02d}"
            if path.exists():
                out.frombytes(path.read_bytes())
        out.extend(self._buf[i])
        return out

    def finish(self) -> None:
        """Raise InputError naming the earliest line whose id was already seen."""
        try:
            worst: tuple[int, int, int, int] | None = None  # line, offset, first line, offset
            for i in range(PARTITIONS):
                part = self._partition(i)
                seen: dict[int, tuple[int, int]] = {}
                for k in range(0, len(part), 3):
                    d, line, offset = part[k], part[k + 1], part[k + 2]
                    first = seen.get(d)
                    if first is None:
                        seen[d] = (line, offset)
                    elif self._same(first[1], offset) and (worst is None or line < worst[0]):
                        worst = (line, offset, first[0], first[1])
            if worst is not None:
                (rec,) = read_at(self.corpus, [worst[1]], self.id_field, self.text_field)
                raise InputError(f"duplicate id {rec.id!r} (first on line {worst[2]})",
                                 file=self.corpus, field=f"line {worst[0]}")
        finally:
            if self._dir is not None:
                self._dir.cleanup()

    def _same(self, a: int, b: int) -> bool:
        ids = {r.offset: r.id for r in read_at(self.corpus, [a, b], self.id_field,
                                                self.text_field)}
        return ids[a] == ids[b]

"""Reading a corpus, one record at a time: JSON Lines, CSV/TSV, and Parquet with pyarrow.

Every record carries where it sits in the file (a byte offset for text formats, a row index
for Parquet), so a worker can later read exactly the documents of one shard without
loading the corpus. Ids are kept as text: `17` and `"17"` are the same id.
"""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from planner.corpus.long import LongRecordError, read_long
from planner.errors import InputError

Format = Literal["jsonl", "csv", "tsv", "parquet"]
SUFFIXES: dict[str, Format] = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv",
                               ".tsv": "tsv", ".parquet": "parquet"}


@dataclass(frozen=True, slots=True)
class Record:
    """One document: where it is, its id and its text (None when the field is absent)."""

    line: int
    """1-based line the record starts on (Parquet: 1-based row)."""
    offset: int
    """Byte offset of the record (Parquet: 0-based row index)."""
    id: str | None
    text: str | None


def corpus_format(path: str | Path) -> Format:
    """The format named by the file's suffix; compressed or unknown files are refused."""
    p = Path(path)
    fmt = SUFFIXES.get(p.suffix.lower())
    if fmt is None:
        hint = " (decompress it first: shards are read by offset)" if p.suffix in (
            ".gz", ".zst", ".bz2", ".xz") else ""
        raise InputError(f"unknown corpus format {p.suffix or '(no suffix)'!r}{hint}; use "
                         ".jsonl, .csv, .tsv or .parquet", file=p)
    if not p.is_file():
        raise InputError("file not found" if not p.exists() else "not a file", file=p)
    return fmt


def _record(path: Path, line: int, offset: int, row: dict[str, Any], id_field: str,
            text_field: str) -> Record:
    value = row.get(id_field)
    if value is not None and (isinstance(value, bool) or not isinstance(value, str | int)):
        raise InputError(f"id must be a string or an integer, got {value!r}",
                         file=path, field=f"line {line}: {id_field}")
    rid = None if value is None or not str(value).strip() else str(value)
    text = row.get(text_field)
    if text is not None and not isinstance(text, str):
        raise InputError(f"text must be a string, got {type(text).__name__}", file=path,
                         field=f"line {line}: {text_field}")
    for name, s in ((id_field, rid), (text_field, text)):
        if s is not None and not s.isascii() and not _encodable(s):
            raise InputError("not valid Unicode (a lone surrogate such as \\ud800)",
                             file=path, field=f"line {line}: {name}")
    return Record(line, offset, rid, text)


def _encodable(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


MAX_RECORD_BYTES = 64 << 20
"""Longest JSON Lines record read (64 MiB); a longer line is refused, not loaded."""


LONG_LINE_BYTES = 4 << 20
"""Lines longer than this are read without loading them when only a prefix of the text
is wanted (`max_chars`)."""


def _jsonl(path: Path, fh: IO[bytes], id_field: str, text_field: str,
           start: int = 0, line: int = 1, max_chars: int | None = None) -> Iterator[Record]:
    offset = start
    limit = LONG_LINE_BYTES if max_chars is not None else MAX_RECORD_BYTES
    while raw := fh.readline(limit + 1):
        if len(raw) > limit and not raw.endswith(b"\n"):
            if max_chars is None:
                raise InputError(f"a record longer than {MAX_RECORD_BYTES >> 20} MiB",
                                 file=path, field=f"line {line}")
            fh.seek(offset)
            try:
                row, size = read_long(fh, id_field, text_field, max_chars)
            except LongRecordError as exc:
                raise InputError(f"not valid JSON: {exc}", file=path,
                                 field=f"line {line}") from None
            yield _record(path, line, offset, row, id_field, text_field)
            fh.seek(offset + size)
            offset += size
            line += 1
            continue
        if raw.strip():
            try:
                row = json.loads(raw)
            except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                raise InputError(f"not valid JSON: {exc}", file=path,
                                 field=f"line {line}") from None
            except ValueError:  # an integer of more digits than Python converts
                raise InputError("not valid JSON: a number too long to read", file=path,
                                 field=f"line {line}") from None
            if not isinstance(row, dict):
                raise InputError("expected a JSON object", file=path, field=f"line {line}")
            yield _record(path, line, offset, row, id_field, text_field)
        offset += len(raw)
        line += 1


class _Lines:
    """Decoded lines of a binary file, remembering where each line started."""

    def __init__(self, path: Path, fh: IO[bytes], offset: int) -> None:
        self.path, self.fh, self.pos = path, fh, offset
        self.starts: list[int] = []

    def __iter__(self) -> Iterator[str]:
        for raw in self.fh:
            self.starts.append(self.pos)
            self.pos += len(raw)
            try:
                yield raw.decode("utf-8")
            except UnicodeDecodeError:
                raise InputError("not UTF-8 text", file=self.path,
                                 field=f"byte {self.starts[-1]}") from None


def _csv(path: Path, fh: IO[bytes], id_field: str, text_field: str,
         delimiter: str) -> Iterator[Record]:
    # Long documents exceed csv's default field limit of 128 KiB.
    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    lines = _Lines(path, fh, 0)
    reader = csv.reader(lines, delimiter=delimiter)
    header = _header(path, reader, id_field, text_field)
    consumed = reader.line_num
    del lines.starts[:consumed]
    for row in reader:
        count = reader.line_num - consumed
        offset = lines.starts[0]
        del lines.starts[:count]
        line = consumed + 1
        consumed = reader.line_num
        if not row:
            continue
        if len(row) != len(header):
            raise InputError(f"{len(row)} fields, the header has {len(header)}", file=path,
                             field=f"line {line}")
        yield _record(path, line, offset, dict(zip(header, row, strict=True)), id_field,
                      text_field)


def _header(path: Path, reader: Any, id_field: str, text_field: str) -> list[str]:
    try:
        header = next(reader)
    except StopIteration:
        raise InputError("empty file: no header row", file=path) from None
    if header:
        header[0] = header[0].removeprefix("\ufeff")
    for name in (id_field, text_field):
        if name not in header:
            raise InputError(f"no column {name!r} in the header ({', '.join(header)})",
                             file=path, field="line 1")
    return header


def _parquet(path: Path, id_field: str, text_field: str) -> Iterator[Record]:
    pq = _pyarrow(path)
    pf = _open_parquet(pq, path)
    names = pf.schema_arrow.names
    for name in (id_field, text_field):
        if name not in names:
            raise InputError(f"no column {name!r} ({', '.join(names)})", file=path)
    row = 0
    batches = pf.iter_batches(batch_size=8192, columns=[id_field, text_field])
    while True:
        try:
            batch = next(batches, None)
            if batch is None:
                break
            data = batch.to_pydict()
        except (OSError, ValueError, TypeError) as exc:  # pyarrow's errors derive from these
            raise InputError(f"cannot read Parquet row {row + 1} on: {exc}", file=path) from None
        for rid, text in zip(data[id_field], data[text_field], strict=True):
            yield _record(path, row + 1, row, {id_field: rid, text_field: text}, id_field,
                          text_field)
            row += 1


def _open_parquet(pq: Any, path: Path) -> Any:
    try:
        return pq.ParquetFile(path)
    except (OSError, ValueError, TypeError) as exc:  # ArrowInvalid is a ValueError
        raise InputError(f"not a readable Parquet file: {str(exc)[:200]}", file=path) from None


def _pyarrow(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install pyarrow", file=path) from None
    return pq


def records(path: str | Path, id_field: str, text_field: str,
            max_chars: int | None = None) -> Iterator[Record]:
    """Every record of the corpus, in file order, streamed. With `max_chars`, a JSON Lines
    record too long to hold is read without loading it, its text cut to that many
    characters (the scan tokenizes no more)."""
    p = Path(path)
    fmt = corpus_format(p)
    if fmt == "parquet":
        yield from _parquet(p, id_field, text_field)
        return
    with p.open("rb") as fh:
        if fmt == "jsonl":
            yield from _jsonl(p, fh, id_field, text_field, max_chars=max_chars)
        else:
            yield from _csv(p, fh, id_field, text_field, "\t" if fmt == "tsv" else ",")


def line_of(path: str | Path, offset: int) -> int:
    """1-based line of a byte offset in a text corpus (for messages; reads up to it)."""
    if corpus_format(path) == "parquet":
        return offset + 1
    line = 1
    with open(path, "rb") as fh:
        left = offset
        while left > 0 and (chunk := fh.read(min(left, 1 << 20))):
            line += chunk.count(b"\n")
            left -= len(chunk)
    return line


def read_at(path: str | Path, offsets: Iterable[int], id_field: str,
            text_field: str) -> Iterator[Record]:
    """The records starting at `offsets` (byte offsets, or row indices for Parquet), in
    ascending offset order: sorted reads keep the disk access sequential."""
    p = Path(path)
    fmt = corpus_format(p)
    wanted = sorted(set(offsets))
    if fmt == "parquet":
        yield from _parquet_rows(p, wanted, id_field, text_field)
        return
    with p.open("rb") as fh:
        header: list[str] | None = None
        if fmt != "jsonl":
            delimiter = "\t" if fmt == "tsv" else ","
            csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
            header = _header(p, csv.reader(_Lines(p, fh, 0), delimiter=delimiter), id_field,
                             text_field)
        for offset in wanted:
            fh.seek(offset)
            if header is None:
                rec = next(_jsonl(p, fh, id_field, text_field, offset, 0), None)
            else:
                row = next(csv.reader(_Lines(p, fh, offset), delimiter=delimiter), None)
                rec = (_record(p, 0, offset, dict(zip(header, row, strict=False)), id_field,
                               text_field) if row else None)
            if rec is None or rec.offset != offset:
                raise InputError(f"no record at byte {offset}: the corpus changed since it "
                                 "was planned", file=p)
            yield rec


def _parquet_rows(path: Path, wanted: list[int], id_field: str,
                  text_field: str) -> Iterator[Record]:
    pf = _open_parquet(_pyarrow(path), path)
    first = 0
    i = 0
    for group in range(pf.num_row_groups):
        n = pf.metadata.row_group(group).num_rows
        if i < len(wanted) and wanted[i] < first + n:
            data = pf.read_row_group(group, columns=[id_field, text_field]).to_pydict()
            while i < len(wanted) and wanted[i] < first + n:
                k = wanted[i] - first
                yield _record(path, wanted[i] + 1, wanted[i],
                              {id_field: data[id_field][k], text_field: data[text_field][k]},
                              id_field, text_field)
                i += 1
        first += n
    if i < len(wanted):
        raise InputError(f"no row {wanted[i]}: the corpus changed since it was planned",
                         file=path)

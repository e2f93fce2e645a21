"""Corpus reading limits: text that is not valid Unicode, a file that is not Parquet, a
record too long to load, and documents cut before they are tokenized."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.corpus import records as corpus
from planner.corpus.long import LongRecordError, read_long
from planner.corpus.records import records
from planner.corpus.scan import CHARS_PER_TOKEN, scan
from planner.corpus.tokens import TokenCounter
from planner.errors import InputError


def _scan(path: Path, counter: TokenCounter | None = None, truncation: int = 8) -> object:
    return scan(path, "id", "text", tokenizer="no-such/tokenizer", truncation=truncation,
                batch_size=2, token_budget=max(16, truncation), progress=False,
                counter=counter)


@pytest.mark.parametrize(("line", "field"), [
    ('{"id": "\\ud800", "text": "x"}', "line 2: id"),
    ('{"id": "b", "text": "caf\\udce9"}', "line 2: text")])
def test_a_lone_surrogate_is_named_by_line_and_field(tmp_path: Path, line: str,
                                                     field: str) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "text": "x"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="not valid Unicode") as info:
        _scan(p)
    assert f"{p}: {field}" in str(info.value)


def test_a_junk_parquet_file_is_one_line(tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pyarrow")
    p = tmp_path / "c.parquet"
    p.write_bytes(b"PAR1 this is not parquet at all PAR1")
    out = tmp_path / "scan.toml"
    rc = main(["corpus", "scan", str(p), "--preset", "embedding-3d", "--tokenizer",
               "none/none", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "not a readable Parquet file" in err
    assert not out.exists()


def test_a_record_longer_than_the_bound_is_refused_unread_by_the_worker(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "MAX_RECORD_BYTES", 1000)
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "text": "x"}\n' + json.dumps({"id": "b", "text": "y" * 5000})
                 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2: a record longer than"):
        list(records(p, "id", "text"))  # the worker reads whole texts


class _Recorder(TokenCounter):
    def __init__(self) -> None:
        super().__init__("no-such/tokenizer")
        self.longest = 0

    def count(self, texts):  # type: ignore[no-untyped-def,override]
        self.longest = max([self.longest, *map(len, texts)])
        return super().count(texts)


def test_a_huge_document_is_cut_before_it_is_tokenized(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    huge = "word " * 2_000_000  # 10 MB of text in one line
    p.write_text(json.dumps({"id": "a", "text": "short"}) + "\n"
                 + json.dumps({"id": "b", "text": huge}) + "\n", encoding="utf-8")
    counter = _Recorder()
    result = _scan(p, counter, truncation=128)
    assert counter.longest == 128 * CHARS_PER_TOKEN
    assert result.truncated == 1 and result.lengths.max > 128  # type: ignore[attr-defined]


@settings(max_examples=200, deadline=None)
@given(row=st.dictionaries(st.sampled_from(["id", "text", "other", "x"]),
                           st.one_of(st.text(), st.integers(), st.none(), st.booleans(),
                                     st.lists(st.text(max_size=3), max_size=3),
                                     st.dictionaries(st.text(max_size=3), st.text(max_size=3),
                                                     max_size=2))),
       keep=st.integers(1, 50), ascii_only=st.booleans())
def test_a_long_record_read_without_loading_it_reads_as_json_does(
        row: dict[str, object], keep: int, ascii_only: bool) -> None:
    line = json.dumps(row, ensure_ascii=ascii_only).encode() + b"\n"
    got, size = read_long(io.BytesIO(line + b'{"next": 1}\n'), "id", "text", keep)
    assert size == len(line)
    if isinstance(row.get("id"), str | int) and not isinstance(row.get("id"), bool):
        assert got["id"] == (row["id"] if isinstance(row["id"], int) else row["id"][:keep])
    if isinstance(row.get("text"), str):
        full = str(row["text"])
        assert full.startswith(got["text"]) and len(got["text"]) >= min(len(full), keep) // 2


def test_a_line_of_many_megabytes_is_scanned_without_being_loaded(tmp_path: Path) -> None:
    p = tmp_path / "c.jsonl"
    with p.open("wb") as fh:
        fh.write(b'{"id": "a", "text": "short"}\n{"text": "')
        chunk = b"lorem ipsum \\u00e9 dolor " * 40_000
        for _ in range(20 * (1 << 20) // len(chunk)):  # 20 MB: read as a stream
            fh.write(chunk)
        fh.write(b'", "id": "huge"}\n{"id": "c", "text": "after"}\n')
    counter = _Recorder()
    result = _scan(p, counter, truncation=128)
    assert result.documents == 3 and result.truncated == 1  # type: ignore[attr-defined]
    assert counter.longest == 128 * CHARS_PER_TOKEN
    ids = [r.id for r in records(p, "id", "text", max_chars=10)]
    assert ids == ["a", "huge", "c"]


@settings(max_examples=200, deadline=None)
@given(raw=st.one_of(st.binary(max_size=60),
                     st.text(alphabet='{}[]",:\\ u0a1tx\n', max_size=40).map(str.encode)))
def test_a_long_record_reader_on_junk_says_it_is_not_json(raw: bytes) -> None:
    with contextlib.suppress(LongRecordError):  # any other exception fails the test
        read_long(io.BytesIO(raw), "id", "text", 8)


def test_a_number_of_thousands_of_digits_is_one_line_naming_the_record(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"id": "a", "text": "x"}\n{"id": "b", "text": "y", "n": ' + "1" * 5000
                    + "}\n")
    with pytest.raises(InputError, match=r"line 2.*a number too long to read"):
        list(records(path, "id", "text"))


def test_a_toml_number_of_thousands_of_digits_is_one_line(tmp_path: Path) -> None:
    from planner.tomlio import read_toml

    path = tmp_path / "p.toml"
    path.write_text("a = " + "1" * 5000 + "\n")
    with pytest.raises(InputError, match="not valid TOML: a number too long to read"):
        read_toml(path)

"""Corpus reading limits: text that is not valid Unicode, a file that is not Parquet, a
record too long to load, and documents cut before they are tokenized."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from planner import corpus
from planner.cli import main
from planner.corpus_scan import CHARS_PER_TOKEN, scan
from planner.corpus_tokens import TokenCounter
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


def test_a_record_longer_than_the_bound_is_refused_unread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus, "MAX_RECORD_BYTES", 1000)
    p = tmp_path / "c.jsonl"
    p.write_text('{"id": "a", "text": "x"}\n' + json.dumps({"id": "b", "text": "y" * 5000})
                 + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="line 2: a record longer than"):
        _scan(p)


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

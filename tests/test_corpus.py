"""Corpus reading and scanning: formats, offsets, errors naming the line, exact figures."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner.cli.main import main
from planner.corpus import ids as corpus_ids
from planner.corpus import lengths
from planner.corpus.records import read_at, records
from planner.corpus.scan import quantiles, scan
from planner.corpus.tokens import TokenCounter
from planner.errors import InputError

MINILM = "sentence-transformers/all-MiniLM-L6-v2"


def write_jsonl(path: Path, rows: list[dict[str, object]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def approx_scan(path: Path, **kw: object) -> object:
    opts = {"tokenizer": "no-such/tokenizer", "truncation": 8, "batch_size": 2,
            "token_budget": 16, "progress": False}
    opts.update(kw)
    return scan(path, "id", "text", **opts)  # type: ignore[arg-type]


def test_jsonl_records_carry_offsets_that_read_back(tmp_path: Path) -> None:
    p = write_jsonl(tmp_path / "c.jsonl", [{"id": i, "text": f"text {i}"} for i in range(5)])
    with p.open("a") as fh:
        fh.write("\n")  # blank lines are skipped
    recs = list(records(p, "id", "text"))
    assert [r.id for r in recs] == ["0", "1", "2", "3", "4"]
    assert [r.line for r in recs] == [1, 2, 3, 4, 5]
    back = list(read_at(p, [recs[3].offset, recs[1].offset], "id", "text"))
    assert [(r.id, r.text) for r in back] == [("1", "text 1"), ("3", "text 3")]


def test_csv_with_multiline_quoted_text_and_tsv(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text('\ufeffid,text,extra\na,"two\nlines",x\nb,plain,y\n', encoding="utf-8")
    recs = list(records(p, "id", "text"))
    assert [(r.id, r.text, r.line) for r in recs] == [("a", "two\nlines", 2), ("b", "plain", 4)]
    assert [r.text for r in read_at(p, [recs[1].offset, recs[0].offset], "id", "text")] == [
        "two\nlines", "plain"]
    t = tmp_path / "c.tsv"
    t.write_text("id\ttext\n1\thello\n", encoding="utf-8")
    assert [r.text for r in records(t, "id", "text")] == ["hello"]


def test_parquet_when_pyarrow_is_installed(tmp_path: Path) -> None:
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")
    p = tmp_path / "c.parquet"
    pq.write_table(pa.table({"id": ["a", "b", "c"], "text": ["x", "y y", "z"]}), p,
                   row_group_size=2)
    recs = list(records(p, "id", "text"))
    assert [r.offset for r in recs] == [0, 1, 2]
    assert [r.id for r in read_at(p, [2, 0], "id", "text")] == ["a", "c"]


@pytest.mark.parametrize(("content", "message"), [
    ('{"id": "a", "text": "x"}\n{"text": "y"}\n', "line 2: no id"),
    ('{"id": "a", "text": "x"}\n{"id": "", "text": "y"}\n', "line 2: no id"),
    ('{"id": "a", "text": "x"}\n{"id": "b", "text": "y"}\n{"id": "a", "text": "z"}\n',
     "line 3: duplicate id 'a' (first on line 1)"),
    ('{"id": "a", "text": "x"}\nnot json\n', "line 2: not valid JSON"),
    ('{"id": "a", "text": 3}\n', "line 1: text: text must be a string"),
    ('{"id": true, "text": "x"}\n', "line 1: id: id must be a string or an integer"),
    ("", "no documents"),
])
def test_bad_corpora_name_the_line(tmp_path: Path, content: str, message: str) -> None:
    p = tmp_path / "c.jsonl"
    p.write_text(content, encoding="utf-8")
    with pytest.raises(InputError) as info:
        approx_scan(p)
    assert message in str(info.value) and str(p) in str(info.value)


def test_csv_missing_column_and_unknown_format(tmp_path: Path) -> None:
    p = tmp_path / "c.csv"
    p.write_text("key,text\n1,x\n", encoding="utf-8")
    with pytest.raises(InputError, match="no column 'id'"):
        approx_scan(p)
    with pytest.raises(InputError, match="decompress it first"):
        approx_scan(tmp_path / "c.jsonl.gz")


def test_duplicates_found_across_spilled_partitions(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(corpus_ids, "SPILL_AT", 7)
    rows = [{"id": f"d{i}", "text": "x"} for i in range(100)]
    rows.insert(80, {"id": "d13", "text": "again"})
    p = write_jsonl(tmp_path / "c.jsonl", rows)
    with pytest.raises(InputError, match=r"line 81: duplicate id 'd13' \(first on line 14\)"):
        approx_scan(p)


def test_scan_figures_with_the_declared_approximation(tmp_path: Path) -> None:
    texts = ["", "one", "one two three", "w " * 20, "a b", "   "]
    p = write_jsonl(tmp_path / "c.jsonl", [{"id": i, "text": t} for i, t in enumerate(texts)])
    s = approx_scan(p)
    counts = TokenCounter("no-such/tokenizer").count(texts)
    assert counts == [2, 4, 6, 28, 5, 2]
    assert s.documents == 6 and s.empty == 2 and s.empty_lines == [1, 6]
    assert s.lengths.source == "approximate" and "approximation" in s.tokenizer
    assert (s.lengths.min, s.lengths.max) == (2, 28)
    assert s.tokens == sum(counts) and s.truncated == 1
    assert [d.id for d in s.longest[:2]] == ["3", "2"]
    assert sum(b.documents for b in s.histogram) == 6
    cut = [min(8, c) for c in counts]
    by = {b.strategy: b for b in s.strategies}
    assert by["original"].padded_tokens == sum(max(cut[i:i + 2]) * 2 for i in range(0, 6, 2))
    assert by["length-grouped"].padded_tokens == lengths.length_grouped(cut, 16, 2)[1]
    assert by["original"].useful_tokens == sum(cut)


def test_scan_counts_with_the_real_tokenizer(tmp_path: Path) -> None:
    pytest.importorskip("tokenizers")
    counter = TokenCounter(MINILM)
    if counter.source != "scanned":
        pytest.skip("the packaged all-MiniLM-L6-v2 is not installed")
    p = write_jsonl(tmp_path / "c.jsonl", [{"id": "a", "text": "Hello world"}])
    s = approx_scan(p, tokenizer=MINILM)
    assert s.lengths.source == "scanned" and s.tokens == 4  # [CLS] hello world [SEP]
    assert len(s.tokenizer_sha256) == 64


def test_quantiles_nearest_rank() -> None:
    counts = {v: 1 for v in range(1, 101)}
    assert quantiles(counts) == (1, 50, 90, 99, 100)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=200), st.integers(50, 400),
       st.integers(1, 9))
def test_strategies_from_counts_equal_strategies_from_lists(lens: list[int], budget: int,
                                                            batch: int) -> None:
    counts: dict[int, int] = {}
    for n in lens:
        counts[n] = counts.get(n, 0) + 1
    assert lengths.grouped_counts(counts, budget) == lengths.length_grouped(lens, budget)
    order = lengths.OriginalOrder(batch)
    for n in lens:
        order.add(n)
    assert order.finish() == lengths.original_order(lens, batch)


def test_corpus_scan_command_writes_toml_once(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    rng = random.Random(0)
    p = write_jsonl(tmp_path / "c.jsonl", [
        {"id": i, "text": " ".join("w" for _ in range(rng.randint(1, 40)))} for i in range(50)])
    out = tmp_path / "scan.toml"
    args = ["corpus", "scan", str(p), "--preset", "embedding-3d", "--tokenizer", "none/none",
            "--out", str(out), "--quiet"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "50 documents" in text and "length-grouped" in text and "approximation" in text
    assert "documents = 50" in out.read_text()
    assert main(args) == 2
    assert "already exists" in capsys.readouterr().err

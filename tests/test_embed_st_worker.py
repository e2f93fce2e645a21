"""The worker end to end on the sentence-transformers backend (a tiny XLM-R with prompts),
and the `embed` command's arguments refused before any model loads."""

from __future__ import annotations

import errno
import json
import random
import tomllib
from pathlib import Path
from typing import Any

import pytest

for _module in ("torch", "numpy", "tokenizers", "transformers", "sentence_transformers"):
    pytest.importorskip(_module)

import numpy as np  # noqa: E402
import tomli_w  # noqa: E402

from planner.cli.main import main  # noqa: E402
from tests.conftest import shipped  # noqa: E402
from tests.st_models import WORDS, Zoo, st_encode  # noqa: E402


@pytest.fixture(scope="module")
def campaign(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("st-campaign")
    folder = Zoo(root).get("xlmr", "xlm-roberta", pooling="mean", include_prompt=False,
                           prompts={"query": "query: ", "passage": "passage: "})
    rng = random.Random(4)
    texts = {f"d{i:02d}": " ".join(rng.choice(WORDS) for _ in range(rng.randint(0, 80)))
             for i in range(30)}
    with (root / "corpus.jsonl").open("w") as fh:
        for rid, text in texts.items():
            fh.write(json.dumps({"id": rid, "text": text}) + "\n")
    data = shipped("embedding-3d")
    data["embedding"].update({"model": str(folder), "tokenizer": str(folder),
                              "truncation_tokens": 64, "token_budget": 1024,
                              "batch_size": 8, "shard_documents": 10, "prompt": "passage: "})
    data["order"]["packages"] = ["sentence-transformers"]
    (root / "preset.toml").write_text(tomli_w.dumps(data))
    assert main(["--preset", str(root / "preset.toml"), "--corpus", str(root / "corpus.jsonl"),
                 "--out", str(root / "plan")]) == 0
    sizes: dict[int, int] = {}
    for line in (root / "plan" / "shards.jsonl").read_text().splitlines():
        batch = json.loads(line)[0]
        sizes[batch] = sizes.get(batch, 0) + 1
    assert max(sizes.values()) == 8  # short texts: capped by batch_size, not the budget
    return {"root": root, "folder": folder, "texts": texts, "plan": root / "plan" / "plan.toml"}


def exports(plan: Path) -> list[Path]:
    return sorted(plan.parent.glob("embeddings/*/v1/*"))


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    return err


@pytest.mark.parametrize(("args", "words"), [
    (["--shard", "5-1"], "--shard: range '5-1' runs backwards"),
    (["--shard", "x"], "--shard: expected shard numbers"),
    (["--shard", "0-99999999999"], "names more shards than any plan has"),
    (["--shard", "²"], "--shard: expected shard numbers"),
    (["--device", "bogus"], "--device: unknown device 'bogus'"),
    (["--device", "cuda:7"], "--device: cuda:7 asked for"),
    (["--version", "7"], "--version: no version 7 in this plan (versions planned: 1)"),
])
def test_bad_arguments_are_refused_before_the_model_loads(
        campaign: dict[str, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, args: list[str], words: str) -> None:
    import planner.embed.encoder as encoder

    def never(*a: object, **k: object) -> None:
        raise AssertionError("the model was loaded")

    monkeypatch.setattr(encoder, "load_encoder", never)
    capsys.readouterr()
    assert main(["embed", str(campaign["plan"]), "--quiet", *args]) == 2
    assert words in one_line_error(capsys)
    assert exports(campaign["plan"]) == []


def test_check_writes_nothing(campaign: dict[str, Any]) -> None:
    assert main(["embed", str(campaign["plan"]), "--check"]) == 1
    assert not list(campaign["plan"].parent.glob("embeddings"))


def test_a_full_disk_is_one_line_naming_the_shard(
        campaign: dict[str, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import shutil

    plan_dir = tmp_path / "plan"
    shutil.copytree(campaign["plan"].parent, plan_dir)
    shutil.copy(campaign["root"] / "corpus.jsonl", tmp_path / "corpus.jsonl")

    def full(*a: object, **k: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    capsys.readouterr()
    assert main(["embed", str(plan_dir / "plan.toml"), "--quiet"]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert lines[0].startswith("embed ") and len(lines) == 2, lines  # what runs, then why not
    err = lines[1]
    assert "shard-00000.npz: cannot write the shard: No space left on device" in err
    left = [p.name for p in plan_dir.glob("embeddings/*/v1/*")]
    assert not [n for n in left if n.endswith((".tmp", ".npz"))], left


def test_st_backend_end_to_end_equals_encode_and_prompts_never_mix(
        campaign: dict[str, Any], capsys: pytest.CaptureFixture[str]) -> None:
    plan = campaign["plan"]
    text = plan.read_text()
    assert 'backend = "sentence-transformers"' in text and 'prompt = "passage: "' in text
    assert main(["embed", str(plan), "--quiet"]) == 0
    assert "with sentence-transformers" in capsys.readouterr().err
    got: dict[str, np.ndarray] = {}
    for f in sorted(plan.parent.glob("embeddings/*/v1/shard-*.npz")):
        with np.load(f, allow_pickle=False) as data:
            got.update(zip(data["ids"].tolist(), data["vectors"], strict=True))
    ids = sorted(campaign["texts"])
    assert sorted(got) == ids
    want = st_encode(campaign["folder"], [campaign["texts"][i] for i in ids], prompt="passage: ")
    assert np.abs(np.stack([got[i] for i in ids]) - want).max() < 1e-5
    manifest = next(plan.parent.glob("embeddings/*/v1/manifest.toml")).read_text()
    assert 'backend = "sentence-transformers"' in manifest and "prompt excluded" in manifest
    # The prompt is fixed for the campaign: another one is refused, never mixed in.
    plan.write_text(text.replace('prompt = "passage: "', 'prompt = "query: "'))
    try:
        capsys.readouterr()
        assert main(["embed", str(plan), "--quiet"]) == 2
        assert "versions never mix" in capsys.readouterr().err.strip().splitlines()[-1]
    finally:
        plan.write_text(text)


def test_a_missing_backend_on_the_rented_machine_is_named(
        campaign: dict[str, Any], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.corpus import backends

    monkeypatch.setattr(backends, "missing_package",
                        lambda b: "sentence_transformers" if b == backends.ST else None)
    capsys.readouterr()
    assert main(["embed", str(campaign["plan"]), "--quiet"]) == 2
    err = one_line_error(capsys)
    assert "embedding.backend" in err and "pip install 'campaign-planner[embed-st]'" in err


def test_the_plans_token_counts_are_the_workers_prompt_included(
        campaign: dict[str, Any]) -> None:
    from planner.corpus.shardlist import read_shard_list
    from planner.planfile.export import read_plan

    plan = campaign["plan"]
    assert main(["embed", str(plan), "--quiet"]) == 0  # finished shards are skipped
    e = read_plan(plan).embedding
    assert e is not None and e.corpus is not None
    planned = read_shard_list(plan.parent / e.corpus.shard_list, e.corpus.shard_list_sha256)
    manifest = tomllib.loads(next(plan.parent.glob("embeddings/*/v1/manifest.toml"))
                             .read_text())
    done = {s["index"]: s for s in manifest["shards"]}
    # Every text carries "passage: ": the plan counted it where the worker computes it.
    assert [(s.useful_tokens, s.padded_tokens) for s in planned.shards] == [
        (done[s.index]["useful_tokens"], done[s.index]["padded_tokens"])
        for s in planned.shards]
    assert e.corpus.useful_tokens == sum(d["useful_tokens"] for d in done.values())

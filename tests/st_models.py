"""Tiny random-weight models, built offline in the tests and saved as sentence-transformers
folders: a tokenizer trained on a few test sentences with `tokenizers`, then a BERT, XLM-R,
MPNet or ModernBERT of two small layers, with the Pooling, Dense and Normalize modules
asked for. Nothing is downloaded."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

os.environ["HF_HUB_OFFLINE"] = "1"

TEXT = ("the rental window card shard corpus vector token model batch length padding export "
        "manifest version pooling truncation query passage of and a to in is")
WORDS = tuple(TEXT.split())


def sentences(n: int, seed: int = 0, longest: int = 40) -> list[str]:
    """Test texts of varied length."""
    import random

    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(1 + int(rng.random() ** 2 * longest)))
            for _ in range(n)]


def _tokenizer() -> Any:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.train_from_iterator([*sentences(300, seed=1), "query: passage:"],
                            trainers.WordPieceTrainer(vocab_size=120, special_tokens=[
                                "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]))
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", cls), ("[SEP]", sep)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


def _model(arch: str, vocab: int) -> Any:
    import transformers as tf

    small = dict(vocab_size=vocab, hidden_size=32, num_hidden_layers=2,
                 num_attention_heads=4, intermediate_size=64, max_position_embeddings=130,
                 pad_token_id=0)
    if arch == "bert":
        return tf.BertModel(tf.BertConfig(**small), add_pooling_layer=False)
    if arch == "xlm-roberta":
        return tf.XLMRobertaModel(tf.XLMRobertaConfig(**small, bos_token_id=2, eos_token_id=3),
                                  add_pooling_layer=False)
    if arch == "mpnet":
        return tf.MPNetModel(tf.MPNetConfig(**small, bos_token_id=2, eos_token_id=3),
                             add_pooling_layer=False)
    if arch == "modernbert":
        return tf.ModernBertModel(tf.ModernBertConfig(
            **small, bos_token_id=2, eos_token_id=3, cls_token_id=2, sep_token_id=3,
            global_attn_every_n_layers=2, local_attention=16))
    raise ValueError(arch)


def build(folder: Path, arch: str = "bert", *, pooling: str = "mean", dense: int = 0,
          normalize: bool = True, max_seq_length: int = 64, prompts: dict[str, str] | None
          = None, include_prompt: bool = True, legacy_pooling: bool = False,
          seed: int = 0) -> Path:
    """Save a tiny model as a sentence-transformers folder and return the folder."""
    import json

    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.base.modules import Dense, Normalize, Transformer
    from sentence_transformers.sentence_transformer.modules import Pooling

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    torch.manual_seed(seed)
    hf = folder / "hf"
    tok = _tokenizer()
    _model(arch, tok.vocab_size).save_pretrained(hf)
    tok.save_pretrained(hf)
    modules: list[Any] = [Transformer(str(hf), max_seq_length=max_seq_length),
                          Pooling(32, pooling_mode=pooling, include_prompt=include_prompt)]
    if dense:
        modules.append(Dense(32, dense))
    if normalize:
        modules.append(Normalize())
    model = SentenceTransformer(modules=modules, prompts=prompts or {})
    out = folder / "st"
    model.save(str(out))
    if legacy_pooling:
        cfg_path = out / "1_Pooling" / "config.json"
        cfg = json.loads(cfg_path.read_text())
        mode = cfg.pop("pooling_mode")
        cfg.update({f"pooling_mode_{k}": mode == v for k, v in (
            ("cls_token", "cls"), ("mean_tokens", "mean"), ("max_tokens", "max"),
            ("mean_sqrt_len_tokens", "mean_sqrt_len_tokens"), ("lasttoken", "lasttoken"),
            ("weightedmean_tokens", "weightedmean"))})
        cfg["word_embedding_dimension"] = cfg.pop("embedding_dimension")
        cfg_path.write_text(json.dumps(cfg))
    return out


def st_encode(folder: Path, texts: list[str], prompt: str | None = None) -> Any:
    """sentence-transformers' own `encode` of the folder: the reference."""
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    return model.encode(texts, prompt=prompt, batch_size=7, convert_to_numpy=True)


class Zoo:
    """Folders built once per test session, by name."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._built: dict[str, Path] = {}

    def get(self, name: str, arch: str = "bert", **options: Any) -> Path:
        """The folder called `name`, built with `options` the first time it is asked for."""
        if name not in self._built:
            self._built[name] = build(self.root / name, arch, **options)
        return self._built[name]

"""A BERT encoder in plain torch, loaded from a model folder's `config.json` and
`model.safetensors` (the layout Hugging Face models ship in).

Module names follow the checkpoint's keys, so the weights load by name and a missing or
misshapen tensor is an error, never a silently random layer. Covers BERT-family encoders
(`model_type = "bert"`): all-MiniLM, bge, e5, gte and the like.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from planner.embed.cpu_gemm import dense_act
from planner.errors import InputError

ACTIVATIONS = {"gelu": lambda x: F.gelu(x), "relu": F.relu,
               "gelu_new": lambda x: F.gelu(x, approximate="tanh"),
               "gelu_pytorch_tanh": lambda x: F.gelu(x, approximate="tanh")}
IGNORED = ("pooler.", "cls.", "embeddings.position_ids")


class _Dense(nn.Module):
    def __init__(self, n_in: int, n_out: int, eps: float | None = None) -> None:
        super().__init__()
        self.dense = nn.Linear(n_in, n_out)
        if eps is not None:
            self.LayerNorm = nn.LayerNorm(n_out, eps=eps)


class _SelfAttention(nn.Module):
    def __init__(self, hidden: int) -> None:
        super().__init__()
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)


class _Attention(nn.Module):
    def __init__(self, hidden: int, eps: float) -> None:
        super().__init__()
        self.self = _SelfAttention(hidden)
        self.output = _Dense(hidden, hidden, eps)


class Layer(nn.Module):
    """One transformer block, post-norm as in BERT."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h, eps = cfg["hidden_size"], cfg.get("layer_norm_eps", 1e-12)
        self.heads = cfg["num_attention_heads"]
        self.act_name = cfg.get("hidden_act", "gelu")
        self.act = ACTIVATIONS[self.act_name]
        self.attention = _Attention(h, eps)
        self.intermediate = _Dense(h, cfg["intermediate_size"])
        self.output = _Dense(cfg["intermediate_size"], h, eps)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x: [batch, seq, hidden]; mask: [batch, 1, 1, seq], True where a token is real."""
        b, s, h = x.shape
        a = self.attention.self

        def split(t: torch.Tensor) -> torch.Tensor:
            return t.view(b, s, self.heads, h // self.heads).transpose(1, 2)

        ctx = F.scaled_dot_product_attention(split(a.query(x)), split(a.key(x)),
                                             split(a.value(x)), attn_mask=mask)
        ctx = ctx.transpose(1, 2).reshape(b, s, h)
        out = self.attention.output
        x = out.LayerNorm(x + out.dense(ctx))
        y = self.output.dense(dense_act(self.intermediate.dense, x, self.act_name, self.act))
        return self.output.LayerNorm(x + y)  # type: ignore[no-any-return]


class _Embeddings(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        h = cfg["hidden_size"]
        self.word_embeddings = nn.Embedding(cfg["vocab_size"], h)
        self.position_embeddings = nn.Embedding(cfg["max_position_embeddings"], h)
        self.token_type_embeddings = nn.Embedding(cfg.get("type_vocab_size", 2), h)
        self.LayerNorm = nn.LayerNorm(h, eps=cfg.get("layer_norm_eps", 1e-12))


class _Encoder(nn.Module):
    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.layer = nn.ModuleList(Layer(cfg) for _ in range(cfg["num_hidden_layers"]))


class Bert(nn.Module):
    """Token ids and attention mask in, one vector per token out."""

    def __init__(self, cfg: dict[str, Any]) -> None:
        super().__init__()
        self.config = cfg
        self.embeddings = _Embeddings(cfg)
        self.encoder = _Encoder(cfg)

    def forward(self, ids: torch.Tensor, attention: torch.Tensor) -> torch.Tensor:
        """ids, attention: [batch, seq] (attention 1 for real tokens, 0 for padding)."""
        e = self.embeddings
        pos = torch.arange(ids.shape[1], device=ids.device)
        x = (e.word_embeddings(ids) + e.position_embeddings(pos)[None]
             + e.token_type_embeddings(torch.zeros_like(ids)))
        x = e.LayerNorm(x)
        mask = attention.bool()[:, None, None, :]
        for layer in self.encoder.layer:
            x = layer(x, mask)
        return x


def load_bert(folder: Path) -> Bert:
    """Build the encoder from `config.json` and load `model.safetensors` into it."""
    cfg_path = folder / "config.json"
    weights = folder / "model.safetensors"
    for p in (cfg_path, weights):
        if not p.is_file():
            raise InputError("missing: the model folder needs config.json and "
                             "model.safetensors", file=p)
    cfg = json.loads(cfg_path.read_text())
    if cfg.get("model_type") != "bert":
        raise InputError(f"model_type {cfg.get('model_type')!r} is not supported: the "
                         "built-in encoder loads BERT-family models", file=cfg_path,
                         field="model_type")
    if cfg.get("hidden_act", "gelu") not in ACTIVATIONS:
        raise InputError(f"activation {cfg['hidden_act']!r} is not supported", file=cfg_path,
                         field="hidden_act")
    from safetensors.torch import load_file

    state = {k.removeprefix("bert."): v for k, v in load_file(str(weights)).items()}
    state = {k: v for k, v in state.items() if not k.startswith(IGNORED)}
    # Built on the meta device: random initialisation of weights about to be replaced would
    # cost more than loading them.
    with torch.device("meta"):
        model = Bert(cfg)
    try:
        missing, unexpected = model.load_state_dict(state, strict=False, assign=True)
    except RuntimeError as exc:
        raise InputError(f"weights do not fit the config: {str(exc).splitlines()[0]}",
                         file=weights) from None
    if missing or unexpected:
        what = f"missing {missing[0]}" if missing else f"unexpected {unexpected[0]}"
        raise InputError(f"weights do not match a BERT encoder ({what})", file=weights)
    return model.eval()

"""Workloads to measure: the built-in reference models and the user's factory.

The factory protocol. `factory = "package.module:function"` names a function called as

    function(factors, *, device, dtype, seq_len, **options)
        -> (model, optimizer, make_batch)

- `factors`: the configuration's factors (baseline's, with the variant's change applied);
- `device`: a `torch.device` to build on — it may be `meta` (FLOP counting) or a CPU
  device under FakeTensorMode (memory estimate): create every tensor on it, nothing else;
- `dtype`: "fp32", "tf32", "bf16" or "fp16"; the step runs under autocast for bf16/fp16,
  so build fp32 weights for training (fp32 master weights) unless you want otherwise;
- `seq_len`: the longest input the run will see (the measurement section's `seq_len`, or
  the embedding campaign's longest text after truncation): make every batch that long;
- `options`: the measurement section's `options` table.

It returns the model, its optimizer (`None` for a forward-only workload such as an
embedding encoder) and `make_batch(micro_batch) -> tuple` of positional arguments for the
model. Training steps call `model(*batch)`, take its output as the loss (its mean when it
is not a scalar), call `backward()` and step the optimizer. Random weights are fine.
"""

from __future__ import annotations

import contextvars
import importlib
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint

from planner.errors import InputError
from planner.figures.analytic import ffn_hidden

Batch = tuple[Any, ...]


@dataclass
class Workload:
    """A model ready to step."""

    model: nn.Module
    optimizer: torch.optim.Optimizer | None
    make_batch: Callable[[int], Batch]
    scaler: Any = None
    """fp16 training's GradScaler, made by the first step that needs it."""

    @property
    def training(self) -> bool:
        """Training step (with an optimizer) or forward only."""
        return self.optimizer is not None


Builder = Callable[[torch.device], Workload]
"""Builds the workload on a device (real, meta, or CPU under FakeTensorMode)."""

MODEL_FLOPS = contextvars.ContextVar("model_flops", default=False)
"""Set while counting the model's FLOPs (`planner.measure.flops.no_recompute`): a builder
whose checkpointing that cannot turn into a plain call builds without it."""


def model_flops_only() -> bool:
    """Whether the model is built to count its FLOPs without the recompute."""
    return MODEL_FLOPS.get()


class LoRALinear(nn.Module):
    """A frozen linear layer plus a trainable low-rank update B·A."""

    def __init__(self, n_in: int, n_out: int, rank: int) -> None:
        super().__init__()
        self.base = nn.Linear(n_in, n_out, bias=False)
        self.base.weight.requires_grad_(False)
        self.a = nn.Parameter(torch.randn(rank, n_in) / math.sqrt(n_in))
        self.b = nn.Parameter(torch.zeros(n_out, rank))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.base(x) + F.linear(F.linear(x, self.a), self.b)


def _linear(n_in: int, n_out: int, rank: int) -> nn.Module:
    return LoRALinear(n_in, n_out, rank) if rank else nn.Linear(n_in, n_out, bias=False)


def _norm(kind: str, d: int) -> nn.Module:
    return nn.LayerNorm(d) if kind == "layernorm" else nn.RMSNorm(d)


class MLP(nn.Module):
    """Two matrices around an activation, or three for swiglu."""

    def __init__(self, s: dict[str, Any], rank: int) -> None:
        super().__init__()
        d, h = s["d_model"], ffn_hidden(s)
        self.kind = s["activation"]
        self.up = _linear(d, h, rank)
        self.gate = _linear(d, h, rank) if self.kind == "swiglu" else None
        self.down = _linear(h, d, rank)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.gate is not None:
            return self.down(F.silu(self.gate(x)) * self.up(x))
        acts: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
            "gelu": F.gelu, "relu": F.relu, "silu": F.silu}
        act = acts[self.kind]
        return self.down(act(self.up(x)))


def _rope(x: torch.Tensor) -> torch.Tensor:
    # Rotary position embedding over (batch, heads, seq, head_dim), computed on the fly so
    # the model holds no buffers beyond its parameters.
    s, dh = x.shape[-2], x.shape[-1]
    half = dh // 2
    freq = 1.0 / (10000 ** (torch.arange(half, device=x.device, dtype=torch.float32) / half))
    ang = torch.arange(s, device=x.device, dtype=torch.float32)[:, None] * freq[None, :]
    cos, sin = ang.cos().to(x.dtype), ang.sin().to(x.dtype)
    x1, x2 = x[..., :half], x[..., half: 2 * half]
    rotated = torch.cat([x1 * cos - x2 * sin, x1 * sin + x2 * cos], dim=-1)
    return torch.cat([rotated, x[..., 2 * half:]], dim=-1) if dh % 2 else rotated


def _alibi(heads: int, s: int, device: torch.device, causal: bool) -> torch.Tensor:
    # Slopes made on the device: a host list would be copied (and synchronized) per layer.
    slopes = torch.exp2(-8.0 * torch.arange(1, heads + 1, device=device,
                                            dtype=torch.float32) / heads)
    pos = torch.arange(s, device=device)
    rel = (pos[None, :] - pos[:, None]).float()
    bias = slopes[:, None, None] * rel[None]
    if causal:
        bias = bias.masked_fill(rel[None] > 0, float("-inf"))
    return bias[None]


class Block(nn.Module):
    """A pre-norm transformer block."""

    def __init__(self, s: dict[str, Any], causal: bool) -> None:
        super().__init__()
        d = s["d_model"]
        rank = s.get("lora_rank", 0)
        targets = s.get("lora_targets", "attn")
        attn_rank = rank if "attn" in targets else 0
        self.heads, self.positional, self.causal = s["heads"], s["positional"], causal
        self.norm1, self.norm2 = _norm(s["norm"], d), _norm(s["norm"], d)
        self.qkv = _linear(d, 3 * d, attn_rank)
        self.out = _linear(d, d, attn_rank)
        self.mlp = MLP(s, rank if "mlp" in targets else 0)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = (t.view(b, s, self.heads, d // self.heads).transpose(1, 2)
                   for t in self.qkv(self.norm1(x)).split(d, dim=-1))
        if self.positional == "rope":
            q, k = _rope(q), _rope(k)
        if self.positional == "alibi":
            bias = _alibi(self.heads, s, x.device, self.causal).to(q.dtype)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=bias)
        else:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=self.causal)
        x = x + self.out(a.transpose(1, 2).reshape(b, s, d))
        return x + self.mlp(self.norm2(x))


class ReferenceModel(nn.Module):
    """The reference transformer: a decoder LM training step, or an embedding encoder."""

    def __init__(self, s: dict[str, Any], *, encoder: bool) -> None:
        super().__init__()
        d, v = s["d_model"], s["vocab"]
        self.encoder = encoder
        self.ckpt = bool(s.get("activation_checkpointing")) and not encoder
        self.tok = nn.Embedding(v, d)
        self.pos = nn.Embedding(s["seq_len"], d) if s["positional"] == "learned" else None
        self.blocks = nn.ModuleList(Block(s, causal=not encoder) for _ in range(s["layers"]))
        self.norm = _norm(s["norm"], d)
        self.head = None if encoder else nn.Linear(d, v, bias=False)
        aux = bool(s.get("aux_loss")) and not encoder
        self.aux_at = max(s["layers"] // 2, 1) - 1 if aux else -1
        self.aux_norm = _norm(s["norm"], d) if aux else None
        self.aux_head = nn.Linear(d, v, bias=False) if aux else None
        if s.get("lora_rank"):
            for name, p in self.named_parameters():
                if not name.endswith((".a", ".b")):
                    p.requires_grad_(False)

    def forward(self, ids: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        if self.head is not None and targets is None:
            raise ValueError("a training step needs targets")
        x = self.tok(ids)
        if self.pos is not None:
            x = x + self.pos.weight[: ids.shape[1]]
        aux_loss: torch.Tensor | None = None
        for i, block in enumerate(self.blocks):
            x = checkpoint(block, x, use_reentrant=False) if self.ckpt else block(x)
            if (i == self.aux_at and self.aux_head is not None and self.aux_norm is not None
                    and targets is not None):
                aux_logits = self.aux_head(self.aux_norm(x))
                aux_loss = F.cross_entropy(aux_logits.float().flatten(0, 1), targets.flatten())
        x = self.norm(x)
        if self.head is None:
            return F.normalize(x.mean(dim=1), dim=-1)
        assert targets is not None
        logits = self.head(x)
        loss = F.cross_entropy(logits.float().flatten(0, 1), targets.flatten())
        return loss if aux_loss is None else loss + 0.1 * aux_loss


def optimizer_for(name: str, params: list[nn.Parameter]) -> torch.optim.Optimizer:
    """The optimizer `name` (adamw, adam, sgd) over `params`."""
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9)
    cls = torch.optim.AdamW if name == "adamw" else torch.optim.Adam
    return cls(params, lr=1e-4)


def reference_builder(settings: dict[str, Any], *, encoder: bool) -> Builder:
    """A builder of the reference transformer with `settings` (see `resolve_reference`)."""

    def build(device: torch.device) -> Workload:
        with torch.device(device):
            model = ReferenceModel(settings, encoder=encoder)
        trainable = [p for p in model.parameters() if p.requires_grad]
        opt = None if encoder else optimizer_for(settings["optimizer"], trainable)
        v, s = settings["vocab"], settings["seq_len"]

        def make_batch(micro_batch: int) -> Batch:
            ids = torch.randint(0, v, (micro_batch, s), device=device)
            return (ids,) if encoder else (ids, torch.roll(ids, -1, dims=1))

        return Workload(model=model, optimizer=opt, make_batch=make_batch)

    return build


def load_factory(target: str, *, source: str | None, field: str) -> Callable[..., Any]:
    """The function a `package.module:function` string names, or an InputError."""
    module_name, _, attr = target.partition(":")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # any import failure is bad input
        raise InputError(f"cannot import {module_name!r}: {type(exc).__name__}: {exc}",
                         file=source, field=field) from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        raise InputError(f"{module_name!r} has no function {attr!r}", file=source, field=field)
    return fn  # type: ignore[no-any-return]


def factory_builder(target: str, factors: dict[str, Any], *, dtype: str, seq_len: int,
                    options: dict[str, Any], source: str | None, field: str) -> Builder:
    """A builder calling the user's factory; a broken factory is an InputError."""
    fn = load_factory(target, source=source, field=field)

    def build(device: torch.device) -> Workload:
        try:
            with torch.device(device):
                out = fn(dict(factors), device=device, dtype=dtype, seq_len=seq_len, **options)
        except (InputError, torch.OutOfMemoryError):
            raise
        except Exception as exc:  # a broken factory is bad input
            raise InputError(f"the factory {target} failed: {type(exc).__name__}: {exc}",
                             file=source, field=field) from None
        if not (isinstance(out, tuple) and len(out) == 3 and isinstance(out[0], nn.Module)
                and (out[1] is None or isinstance(out[1], torch.optim.Optimizer))
                and callable(out[2])):
            raise InputError(f"the factory {target} must return (model, optimizer or None, "
                             "make_batch)", file=source, field=field)
        return Workload(model=out[0], optimizer=out[1], make_batch=out[2])

    return build

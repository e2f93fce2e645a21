"""The analytic tier: FLOPs and memory from formulas, with no torch at all.

Used when nothing was measured (`campaign-planner compare --analytic`) and as a cross-check
of what `measure` counts. Every figure it gives is labelled `analytic`.

FLOPs (Kaplan et al. 2020, "Scaling Laws for Neural Language Models", §2.1): a training
step costs about 6 · params · tokens (2 for the forward pass, 4 for the backward pass), an
inference pass 2 · params · tokens; `params` counts the weights used in matrix products
(embedding lookups cost no multiply-adds). The reference transformer adds its attention
products exactly: 4 · seq_len · d_model per token and layer in the forward pass (QKᵀ and
the weighted sum of V, over the full square, as FlopCounterMode counts them).

Memory (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion
Parameter Models", §3.1): mixed-precision Adam holds 16 bytes per parameter — with torch
autocast the fp32 weights (4) are the master copy, their gradients take 4 and Adam's two
moments 8. Activations (Korthikanti et al. 2022, "Reducing Activation Recomputation in Large
Transformer Models", §4.1, eq. 1): s·b·h·(34 + 5·a·s/h) bytes per layer in 16-bit; fused
attention kernels do not keep the a·s² scores, leaving 34·s·b·h; full recomputation keeps
2·s·b·h per layer plus one layer's worth. The logits add b·s·vocab·10 bytes (16-bit logits,
their fp32 copy for the loss and its gradient).
"""

from __future__ import annotations

from typing import Any, NamedTuple

GIB = 2**30
OPTIMIZER_BYTES = {"adam": 8, "adamw": 8, "sgd": 4}
"""Optimizer state bytes per trainable parameter (fp32 states; SGD with momentum)."""


def training_step_flops(params: float, tokens: float) -> float:
    """6 · params · tokens: one training step (forward + backward)."""
    return 6.0 * params * tokens


def inference_flops(params: float, tokens: float) -> float:
    """2 · params · tokens: one forward pass."""
    return 2.0 * params * tokens


class ParamCount(NamedTuple):
    """Parameters of a reference model."""

    total: int
    """Every parameter, embeddings included."""
    trainable: int
    """Parameters that receive gradients."""
    matmul: int
    """Weights used in matrix products (what FLOPs scale with)."""


class MemoryBreakdown(NamedTuple):
    """Device memory of one step, in bytes, by kind."""

    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def total(self) -> float:
        """Sum of the four."""
        return self.weights + self.gradients + self.optimizer + self.activations

    def gib(self) -> dict[str, float]:
        """The four and the total, in GiB."""
        return {"weights": self.weights / GIB, "gradients": self.gradients / GIB,
                "optimizer": self.optimizer / GIB, "activations": self.activations / GIB,
                "total": self.total / GIB}


def ffn_hidden(s: dict[str, Any]) -> int:
    """MLP hidden size of the reference: ffn_mult × d_model (two thirds of it for swiglu,
    which has three matrices)."""
    f = int(s["ffn_mult"] * s["d_model"])
    return int(2 * f / 3) if s["activation"] == "swiglu" else f


def reference_params(s: dict[str, Any], *, encoder: bool = False) -> ParamCount:
    """Exact parameter counts of the reference model built by `planner.measure.workloads`."""
    d, L, V, S = s["d_model"], s["layers"], s["vocab"], s["seq_len"]
    h = ffn_hidden(s)
    norm = 2 * d if s["norm"] == "layernorm" else d
    mlp = (3 if s["activation"] == "swiglu" else 2) * d * h
    attn = 4 * d * d
    r = s.get("lora_rank", 0)
    targets = s.get("lora_targets", "attn")
    lora = 0
    if r:
        if "attn" in targets:
            lora += r * (d + 3 * d) + r * (d + d)
        if "mlp" in targets:
            lora += (3 if s["activation"] == "swiglu" else 2) * r * (d + h)
    embed = V * d + (S * d if s["positional"] == "learned" else 0)
    head = 0 if encoder else V * d
    aux = (norm + V * d) if (s.get("aux_loss") and not encoder) else 0
    base = embed + L * (2 * norm + attn + mlp) + norm + head + aux
    matmul = L * (attn + mlp) + head + (V * d if aux else 0)
    total = base + L * lora
    trainable = L * lora if r else total
    return ParamCount(total=total, trainable=trainable, matmul=matmul + L * lora)


def reference_flops(s: dict[str, Any], batch: int, *, training: bool = True) -> float:
    """FLOPs of one micro-batch through the reference (training: forward and backward)."""
    tokens = batch * s["seq_len"]
    p = reference_params(s, encoder=not training)
    attention = 4.0 * s["seq_len"] * s["d_model"] * s["layers"] * tokens
    if not training:
        return inference_flops(p.matmul, tokens) + attention
    heads = s["vocab"] * s["d_model"] * (2 if s.get("aux_loss") else 1)
    # Activation checkpointing recomputes the blocks' forward pass (not the heads'), and
    # torch's non-reentrant checkpoint stops before each block's last product, whose output
    # the backward pass does not need.
    last = s["layers"] * s["d_model"] * ffn_hidden(s)
    recompute = (inference_flops(p.matmul - heads - last, tokens) + attention
                 if s.get("activation_checkpointing") else 0.0)
    if not s.get("lora_rank"):
        return training_step_flops(p.matmul, tokens) + 3.0 * attention + recompute
    # Frozen weights still pass gradients back to their input, but get none themselves
    # (approximate: no gradient flows into the first frozen layers at all).
    forward = inference_flops(p.matmul, tokens) + attention
    backward = 2.0 * (p.matmul + p.trainable) * tokens + 2.0 * attention
    return forward + backward + recompute


def reference_split(s: dict[str, Any], batch: int) -> tuple[float, float]:
    """(matrix products, attention) FLOPs of one training micro-batch through the reference:
    `reference_flops` split for the efficiency model."""
    tokens = batch * s["seq_len"]
    attention = 4.0 * s["seq_len"] * s["d_model"] * s["layers"] * tokens
    attn = attention * (4.0 if s.get("activation_checkpointing") else 3.0)
    return reference_flops(s, batch) - attn, attn


def activation_bytes(s: dict[str, Any], batch: int, *, training: bool = True) -> float:
    """Activation memory of one micro-batch (Korthikanti et al. 2022, fused attention)."""
    sbh = s["seq_len"] * batch * s["d_model"]
    scale = 2.0 if s["dtype"] in ("fp32", "tf32") else 1.0
    if not training:
        # Inference keeps only the tensors of the layer running.
        return scale * sbh * (2 * s["ffn_mult"] + 6)
    if s["positional"] == "alibi":
        # The additive bias is materialized: heads × s × s per sample, kept for backward.
        per_layer_extra = 4.0 * batch * s["heads"] * s["seq_len"] ** 2
    else:
        per_layer_extra = 0.0
    layer = scale * 34.0 * sbh + per_layer_extra
    kept = (2.0 * scale * sbh * s["layers"] + layer if s.get("activation_checkpointing")
            else layer * s["layers"])
    logits = 10.0 * batch * s["seq_len"] * s["vocab"] * (2 if s.get("aux_loss") else 1)
    return kept + logits


def training_memory(params: int, trainable: int, optimizer: str,
                    activations: float) -> MemoryBreakdown:
    """Weights + gradients + optimizer states + activations (ZeRO §3.1: 16 bytes per
    parameter for mixed-precision Adam)."""
    return MemoryBreakdown(weights=4.0 * params, gradients=4.0 * trainable,
                           optimizer=float(OPTIMIZER_BYTES[optimizer] * trainable),
                           activations=activations)


def reference_memory(s: dict[str, Any], batch: int, *, training: bool = True) -> MemoryBreakdown:
    """Analytic memory of the reference at a micro-batch."""
    p = reference_params(s, encoder=not training)
    if not training:
        width = 4 if s["dtype"] in ("fp32", "tf32") else 2
        return MemoryBreakdown(weights=float(width * p.total), gradients=0.0, optimizer=0.0,
                               activations=activation_bytes(s, batch, training=False))
    return training_memory(p.total, p.trainable, s["optimizer"],
                           activation_bytes(s, batch))

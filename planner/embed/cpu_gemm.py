"""Linear layers on oneDNN's float32 kernels when a model runs on the CPU, where they
measure faster than PyTorch's own.

PyTorch's CPU builds send a float32 `nn.Linear` to MKL's sgemm, which on AMD processors
takes a generic code path unless MKL is made to take its Intel one. Measured on a shared
AMD EPYC (AVX-512, one thread, a 4,096 × 384 by 384 × 1,536 product;
`benchmarks/bench_embed.py --kernels`): MKL 80-100 GFLOP/s on its default path, 220-235
with its Intel path forced, oneDNN (also shipped inside PyTorch) 245-260. So the gain is
large where MKL's dispatch is poor and small (about 1.1x) where it is fine; on other CPUs it
may be none. `pack_linears` therefore times both products on each layer's shape when the
model loads and packs only the layers where oneDNN measures faster (by `GAIN`): it gives
such an `nn.Linear` a copy of its weight in oneDNN's blocked layout and routes its forward
through oneDNN's float32 product: the same arithmetic (float32 inputs, float32
accumulation, no reduced-precision mode), only the order of the additions differs, as it
does between any two BLAS libraries. The weights themselves are left as they are.

Only float32 on the CPU: reduced precisions already go to oneDNN, and CUDA to cuBLAS.
Where this PyTorch lacks the operators or the first product disagrees with `F.linear`,
nothing is changed. The packed copies take as much memory as the weights they copy, so a
model whose linear weights exceed `MEMORY_SHARE` of this machine's memory keeps its own.
"""

from __future__ import annotations

import os
import time
import types
from collections.abc import Callable
from typing import Any, Literal

# GELU activations oneDNN applies inside the product (its erf and tanh forms), by the
# `hidden_act` names of model configs.
FUSED_GELU = {"gelu": "none", "gelu_new": "tanh", "gelu_pytorch_tanh": "tanh"}
_fused_ok: dict[str, bool] = {}
# Most of the machine's memory the packed copies may take.
MEMORY_SHARE = 0.25

# The float32 product of a packed weight must agree with F.linear to float32 rounding of
# sums of a few thousand terms; anything further off means the kernel is not what it seems.
TOLERANCE = 1e-4

# A layer is packed only when oneDNN's product takes less than its F.linear time ÷ GAIN:
# below that the difference is within a loaded machine's noise and not worth changing the
# kernel for. Timed on PROBE_ROWS rows, best of PROBE_REPEATS interleaved runs.
GAIN = 1.05
PROBE_ROWS = 256
PROBE_REPEATS = 5
_faster: dict[tuple[int, int, bool, int], bool] = {}


def available() -> bool:
    """Whether this PyTorch has oneDNN's packed float32 linear operators."""
    import torch

    ops = getattr(torch.ops, "mkldnn", None)
    return bool(torch.backends.mkldnn.is_available() and ops is not None
                and hasattr(ops, "_reorder_linear_weight") and hasattr(ops, "_linear_pointwise"))


def physical_memory() -> int | None:
    """Bytes of memory this machine has, where the system says (None otherwise)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def _packed_forward(module: Any, x: Any) -> Any:
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, module.packed_weight, module.bias,
                                              "none", [], "")


def _agrees(module: Any) -> bool:
    import torch

    x = torch.linspace(-1.0, 1.0, 8 * module.in_features).reshape(8, module.in_features)
    with torch.inference_mode():
        want = torch.nn.functional.linear(x, module.weight, module.bias)
        got = _packed_forward(module, x)
    return bool(got.shape == want.shape and torch.allclose(got, want, rtol=TOLERANCE,
                                                           atol=TOLERANCE))


def faster(module: Any) -> bool:
    """Whether oneDNN's packed product of this (packed) layer beats `F.linear` on this
    machine at its shape and the current thread count (cached per shape)."""
    import torch

    key = (module.in_features, module.out_features, module.bias is not None,
           torch.get_num_threads())
    if key not in _faster:
        x = torch.linspace(-1.0, 1.0, PROBE_ROWS * module.in_features).reshape(
            PROBE_ROWS, module.in_features)
        best = {"plain": float("inf"), "packed": float("inf")}
        runs: dict[str, Callable[[], Any]] = {
            "plain": lambda: torch.nn.functional.linear(x, module.weight, module.bias),
            "packed": lambda: _packed_forward(module, x)}
        with torch.inference_mode():
            for f in runs.values():
                f()  # warm-up
            for _ in range(PROBE_REPEATS):
                for name, f in runs.items():
                    t0 = time.perf_counter()
                    f()
                    best[name] = min(best[name], time.perf_counter() - t0)
        _faster[key] = best["plain"] > GAIN * best["packed"]
    return _faster[key]


def pack_linears(model: Any, *, when: Literal["faster", "always"] = "faster") -> int:
    """Route the float32 `nn.Linear`s of a CPU model through oneDNN: those where it
    measures faster (`when="faster"`), or every one that agrees with `F.linear`
    (`"always"`); how many were."""
    import torch

    if not available():
        return 0
    linears = [m for m in model.modules() if isinstance(m, torch.nn.Linear)
               and m.weight.device.type == "cpu" and m.weight.dtype == torch.float32]
    total = physical_memory()
    weights = sum(m.weight.numel() * m.weight.element_size() for m in linears)
    if total is not None and weights > MEMORY_SHARE * total:
        return 0
    packed = 0
    for m in linears:
        try:
            with torch.inference_mode():
                m.packed_weight = torch.ops.mkldnn._reorder_linear_weight(m.weight.detach(),
                                                                          None)
            if not _agrees(m) or (when == "faster" and not faster(m)):
                del m.packed_weight
                continue
        except RuntimeError:
            continue
        # An instance attribute: nn.Module calls self.forward, so this one wins.
        m.forward = types.MethodType(_packed_forward, m)  # type: ignore[method-assign]
        packed += 1
    return packed


def dense_act(module: Any, x: Any, act: str, fallback: Callable[[Any], Any]) -> Any:
    """`fallback(module(x))`, as one oneDNN call when the linear is packed and `act` a GELU
    (`act` names it as model configs do): the activation is applied to the product in
    place, saving a pass over the widest tensor of the block."""
    algo = FUSED_GELU.get(act)
    if algo is None or not hasattr(module, "packed_weight") or not _fused_agrees(module, act):
        return fallback(module(x))
    return _fused(module, x, algo)


def _fused(module: Any, x: Any, algo: str) -> Any:
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, module.packed_weight, module.bias, "gelu",
                                              [], algo)


def _fused_agrees(module: Any, act: str) -> bool:
    if act not in _fused_ok:
        import torch

        x = torch.linspace(-1.0, 1.0, 8 * module.in_features).reshape(8, module.in_features)
        approximate = "none" if FUSED_GELU[act] == "none" else "tanh"
        try:
            with torch.inference_mode():
                want = torch.nn.functional.gelu(_packed_forward(module, x),
                                                approximate=approximate)
                got = _fused(module, x, FUSED_GELU[act])
            _fused_ok[act] = bool(torch.allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE))
        except RuntimeError:
            _fused_ok[act] = False
    return _fused_ok[act]

"""FLOPs counted on the meta device against hand formulas; the fake-tensor memory estimate
against the analytic weights + gradients + Adam states."""

from __future__ import annotations

from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from planner.figures.analytic import (  # noqa: E402
    GIB,
    reference_flops,
    reference_params,
    training_memory,
    training_step_flops,
)
from planner.measure.flops import count_flops  # noqa: E402
from planner.measure.memory import fake_estimate  # noqa: E402
from planner.measure.workloads import Block, Workload, reference_builder  # noqa: E402
from planner.spec.measure import MeasureSpec, resolve_reference  # noqa: E402

B, N_IN, N_OUT = 8, 512, 256


def linear(requires_grad_input: bool) -> Any:
    def build(device: Any) -> Workload:
        model = nn.Linear(N_IN, N_OUT, device=device)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        return Workload(model, opt, lambda b: (torch.randn(b, N_IN, device=device,
                                                           requires_grad=requires_grad_input),))
    return build


def test_linear_layer_flops_equal_the_hand_formula() -> None:
    # Forward 2·B·in·out; backward: the weight gradient 2·B·in·out, plus the input's when
    # the input needs one. Biases are not matrix products and are not counted.
    flops, params, _ = count_flops(linear(False), B)
    assert flops == 4 * B * N_IN * N_OUT
    assert params == N_IN * N_OUT + N_OUT
    assert count_flops(linear(True), B)[0] == 6 * B * N_IN * N_OUT
    forward_only, _, _ = count_flops(linear(False), B, training=False)
    assert forward_only == 2 * B * N_IN * N_OUT


def test_transformer_block_flops_equal_the_hand_formula() -> None:
    d, heads, s, b = 64, 4, 32, 3
    spec = MeasureSpec(reference="transformer", d_model=d, heads=heads, seq_len=s, layers=1,
                       vocab=100, activation="gelu", ffn_mult=4)
    settings, _ = resolve_reference(spec, {})

    def build(device: Any) -> Workload:
        block = Block(settings, causal=True).to(device)
        return Workload(block, torch.optim.SGD(block.parameters(), lr=0.1),
                        lambda n: (torch.randn(n, s, d, device=device, requires_grad=True),))

    flops, _, _ = count_flops(build, b)
    tokens = b * s
    matmul_params = 4 * d * d + 2 * d * 4 * d        # qkv + out, two MLP matrices
    attention = 4 * b * s * s * d                     # QKᵀ and the weighted sum of V
    forward = 2 * tokens * matmul_params + attention
    assert flops == 3 * forward                       # backward costs twice the forward


@pytest.mark.parametrize("factors", [
    {},
    {"positional": "rope", "norm": "rmsnorm", "activation": "swiglu"},
    {"positional": "alibi", "aux_loss": True},
    {"activation_checkpointing": True},
])
def test_reference_model_flops_and_params_match_the_analytic_tier(factors: dict) -> None:
    spec = MeasureSpec(reference="transformer", d_model=64, layers=2, heads=4, seq_len=32,
                       vocab=100)
    settings, _ = resolve_reference(spec, factors)
    # The analytic tier counts what the device runs: the recompute of checkpointing too.
    flops, params, trainable = count_flops(reference_builder(settings, encoder=False), 3,
                                           recompute=True)
    expected = reference_params(settings)
    assert (params, trainable) == (expected.total, expected.trainable)
    assert flops == reference_flops(settings, 3)


def test_six_params_tokens() -> None:
    assert training_step_flops(1e9, 2048) == 6 * 1e9 * 2048


def test_fake_tensor_estimate_of_an_mlp_is_within_10_percent_of_analytic_adam() -> None:
    def build(device: Any) -> Workload:
        model = nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 256)).to(device)
        return Workload(model, torch.optim.Adam(model.parameters()),
                        lambda b: (torch.randn(b, 256, device=device),))

    est = fake_estimate(build, 32, "fp32")
    params = 256 * 1024 + 1024 + 1024 * 256 + 256
    analytic = training_memory(params, params, "adam", 0.0)
    states = est.weights + est.gradients + est.optimizer
    assert states == pytest.approx(analytic.total, rel=0.10)
    assert est.weights == 4 * params and est.gradients == 4 * params
    assert est.optimizer == pytest.approx(8 * params, rel=0.01)
    assert est.peak >= states
    assert est.activations > 0


def test_fake_tensor_estimate_grows_with_the_micro_batch_and_needs_no_storage() -> None:
    spec = MeasureSpec(reference="transformer", d_model=64, layers=2, heads=4, seq_len=64,
                       vocab=256, dtype="bf16")
    settings, _ = resolve_reference(spec, {})
    build = reference_builder(settings, encoder=False)
    small, big = fake_estimate(build, 2, "bf16"), fake_estimate(build, 8, "bf16")
    assert big.peak > small.peak
    assert big.weights == small.weights == 4 * reference_params(settings).total
    assert small.peak / GIB < 1


def test_factories_that_move_modules_work_under_fake_tensors() -> None:
    def build(device: Any) -> Workload:
        model = nn.Linear(16, 16).to(device).to(torch.bfloat16).cuda().float()
        return Workload(model, torch.optim.AdamW(model.parameters()),
                        lambda b: (torch.randn(b, 16, device=device),))

    est = fake_estimate(build, 4, "fp32")
    assert est.weights == 4 * (16 * 16 + 16)


def test_fake_tensor_estimate_of_adapters_counts_only_their_gradients_and_states() -> None:
    spec = MeasureSpec(reference="transformer", d_model=64, layers=2, heads=4, seq_len=32,
                       vocab=128, dtype="fp32")
    settings, _ = resolve_reference(spec, {"lora_rank": 4, "lora_targets": "attn+mlp"})
    counts = reference_params(settings)
    est = fake_estimate(reference_builder(settings, encoder=False), 2, "fp32")
    assert est.weights == 4 * counts.total
    assert est.gradients == 4 * counts.trainable < est.weights / 4
    assert est.optimizer == pytest.approx(8 * counts.trainable, rel=0.01)

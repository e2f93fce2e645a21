"""Linear layers on oneDNN's float32 kernels on the CPU: the same products as `F.linear`
to float32 rounding, the weights untouched, and nothing changed where oneDNN is absent or
the model is not float32 on the CPU."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from planner.embed import cpu_gemm  # noqa: E402


def model() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(48, 96), torch.nn.GELU(),
                               torch.nn.Linear(96, 24, bias=False)).eval()


@pytest.mark.skipif(not cpu_gemm.available(), reason="this PyTorch has no oneDNN linear")
def test_packed_linears_compute_what_f_linear_computes() -> None:
    net = model()
    x = torch.randn(5, 7, 48)
    with torch.inference_mode():
        want = net(x)
    weights = [p.clone() for p in net.parameters()]
    assert cpu_gemm.pack_linears(net, when="always") == 2
    assert all(hasattr(m, "packed_weight") for m in net if isinstance(m, torch.nn.Linear))
    with torch.inference_mode():
        got = net(x)
    assert got.shape == want.shape and (got - want).abs().max().item() < 1e-5
    assert all(torch.equal(a, b) for a, b in zip(weights, net.parameters(), strict=True))
    assert {k for k, _ in net.state_dict().items()} == {"0.weight", "0.bias", "2.weight"}


def test_nothing_changes_without_onednn_or_off_float32(monkeypatch: pytest.MonkeyPatch) -> None:
    half = model().to(torch.bfloat16)
    assert cpu_gemm.pack_linears(half) == 0
    assert not any(hasattr(m, "packed_weight") for m in half.modules())
    # Weights too large to copy twice on this machine keep their own kernels.
    weights = sum(p.numel() * 4 for p in model().parameters() if p.dim() == 2)
    monkeypatch.setattr(cpu_gemm, "physical_memory", lambda: int(weights / 0.25) - 1)
    assert cpu_gemm.pack_linears(model()) == 0
    monkeypatch.setattr(cpu_gemm, "available", lambda: False)
    net = model()
    assert cpu_gemm.pack_linears(net) == 0
    assert all("forward" not in vars(m) for m in net.modules())


@pytest.mark.skipif(not cpu_gemm.available(), reason="this PyTorch has no oneDNN linear")
def test_a_kernel_that_disagrees_is_not_used(monkeypatch: pytest.MonkeyPatch) -> None:
    def off(module: object, x: torch.Tensor) -> torch.Tensor:
        return torch.zeros(x.shape[0], module.out_features)  # type: ignore[attr-defined]

    monkeypatch.setattr(cpu_gemm, "_packed_forward", off)
    net = model()
    assert cpu_gemm.pack_linears(net) == 0
    assert all("forward" not in vars(m) and not hasattr(m, "packed_weight")
               for m in net.modules())


@pytest.mark.parametrize("onednn_faster", [True, False])
def test_the_builtin_encoder_packs_its_linears_where_onednn_measures_faster(
        monkeypatch: pytest.MonkeyPatch, onednn_faster: bool) -> None:
    pytest.importorskip("tokenizers")
    pytest.importorskip("safetensors")
    from planner.corpus.tokens import find_model_dir
    from planner.embed.encoder import Encoder

    name = "sentence-transformers/all-MiniLM-L6-v2"
    if find_model_dir(name) is None or not cpu_gemm.available():
        pytest.skip("needs the packaged model and oneDNN")
    monkeypatch.setattr(cpu_gemm, "faster", lambda module: onednn_faster)
    enc = Encoder(name, name, 32, "mean", "l2", device="cpu")
    linears = [m for m in enc.net.modules() if isinstance(m, torch.nn.Linear)]
    assert linears and all(hasattr(m, "packed_weight") == onednn_faster for m in linears)
    assert all(("forward" in vars(m)) == onednn_faster for m in linears)


@pytest.mark.skipif(not cpu_gemm.available(), reason="this PyTorch has no oneDNN linear")
def test_the_timing_decides_per_shape_and_is_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    # A clock where every packed product takes 1 unit and every F.linear one 2 (or 1).
    for plain, expected in ((2.0, True), (1.0, False)):
        cpu_gemm._faster.clear()
        ticks = iter([0.0, plain, 0.0, 1.0] * cpu_gemm.PROBE_REPEATS)
        monkeypatch.setattr(cpu_gemm.time, "perf_counter", lambda t=ticks: next(t))
        lin = model()[0]
        assert cpu_gemm.pack_linears(lin) == int(expected)
        assert hasattr(lin, "packed_weight") == expected
        assert cpu_gemm.faster(lin) is expected  # cached: the clock is not read again
    cpu_gemm._faster.clear()


@pytest.mark.parametrize(("act", "approximate"), [("gelu", "none"), ("gelu_new", "tanh"),
                                                  ("gelu_pytorch_tanh", "tanh")])
def test_gelu_inside_the_product_equals_gelu_after_it(act: str, approximate: str) -> None:
    lin = model()[0]
    x = torch.randn(3, 11, 48)
    with torch.inference_mode():
        want = torch.nn.functional.gelu(lin(x), approximate=approximate)
        cpu_gemm.pack_linears(lin, when="always")

        def unfused(t: torch.Tensor) -> torch.Tensor:
            raise AssertionError("the fused product should have been used")

        fallback = unfused if cpu_gemm.available() else (
            lambda t: torch.nn.functional.gelu(t, approximate=approximate))
        got = cpu_gemm.dense_act(lin, x, act, fallback)
    assert (got - want).abs().max().item() < 1e-5


def test_other_activations_and_unpacked_linears_take_the_fallback() -> None:
    lin = model()[0]
    x = torch.randn(4, 48)
    with torch.inference_mode():
        plain = cpu_gemm.dense_act(lin, x, "gelu", torch.relu)  # not packed: fallback
        assert torch.equal(plain, torch.relu(lin(x)))
        cpu_gemm.pack_linears(lin, when="always")
        relu = cpu_gemm.dense_act(lin, x, "relu", torch.relu)
    want = torch.relu(torch.nn.functional.linear(x, lin.weight, lin.bias))
    assert (relu - want).abs().max().item() < 1e-5

"""The smaller measurement rules: usable memory and budgets, the multi-card terms, sm_89 with
an older CUDA, MFU against HFU under activation checkpointing, the ALiBi bias, fp16 with a
GradScaler, and `cuda:N` devices."""

from __future__ import annotations

import pytest

from planner.errors import InputError
from planner.figures.multicard import multi_card
from planner.measure.stack import check_stack, cuda_finding
from planner.spec.catalog import load_catalog
from planner.spec.matrix import memory_budget
from tests.conftest import plan_dict, shipped


def test_budgets_use_the_memory_a_process_can_allocate() -> None:
    cards = load_catalog().cards
    a40 = cards["a40"]
    # 46,068 MiB in nvidia-smi with ECC on; 45,416 MiB to torch; the context stays outside.
    assert a40.usable_memory_gib == pytest.approx(45416 / 1024, abs=0.01)
    assert a40.allocatable_gib == pytest.approx(a40.usable_memory_gib - a40.context_gib)
    plan = plan_dict(shipped("ablation-7d"))
    o = plan.assumptions.overheads
    assert memory_budget(a40, o) == pytest.approx(45416 / 1024 - 0.75 - o.memory_margin_gib,
                                                  abs=0.01)
    assert memory_budget(a40, o) < a40.memory_gib - o.memory_margin_gib
    for key, card in cards.items():
        assert card.usable_memory_gib is not None and card.memory_source, key
        assert card.usable_memory_gib < card.memory_gib, key
        assert card.pcie_gbps > 0, key


def test_the_all_reduce_term_follows_the_link_and_the_ring_factor() -> None:
    cards = load_catalog().cards
    params = 1_000_000_000                               # 4 GB of fp32 gradients
    assert multi_card(cards["l40s"], 1, params) is None
    l40s = multi_card(cards["l40s"], 4, params)
    h100 = multi_card(cards["h100-sxm"], 8, params)
    a6000 = multi_card(cards["a6000"], 2, params)
    a6000_4 = multi_card(cards["a6000"], 4, params)
    assert l40s is not None and h100 is not None and a6000 is not None and a6000_4 is not None
    assert l40s.link == "PCIe" and l40s.link_gbps == 32
    assert l40s.allreduce_s == pytest.approx(2 * 3 / 4 * 4e9 / 32e9)
    assert h100.link == "NVLink" and h100.allreduce_s == pytest.approx(2 * 7 / 8 * 4e9 / 450e9)
    assert a6000.link == "NVLink" and a6000_4.link == "PCIe"   # a bridge joins two cards
    assert l40s.bucket_gib == pytest.approx(4e9 / 2**30) and l40s.extra_gib > l40s.bucket_gib
    assert "2(n−1)/n" in l40s.time_note() and "DDP gradient buckets" in l40s.memory_note()


def test_sm89_with_cuda_11_1_to_11_7_is_a_warning_not_a_refusal() -> None:
    cards = load_catalog().cards
    for cuda in ("11.1", "11.4", "11.7"):
        found = cuda_finding(cards["l40s"], cuda)
        assert found is not None and found[0] == "warn" and "sm_86 code runs" in found[1]
    assert cuda_finding(cards["l40s"], "11.8") is None
    assert cuda_finding(cards["l40s"], "11.0")[0] == "warn"   # type: ignore[index]  # sm_80
    assert cuda_finding(cards["l40s"], "10.2")[0] == "fail"   # type: ignore[index]
    assert cuda_finding(cards["h100-sxm"], "11.7")[0] == "fail"   # type: ignore[index]
    report = check_stack({"l40s": cards["l40s"]}, None, order=("11.7", "2.0"))
    assert next(f.status for f in report.findings if f.what.startswith("l40s")) == "warn"
    data = shipped("ablation-7d")
    data["campaign"]["card"] = "l40s"
    data["order"]["cuda"] = "11.7"
    plan = plan_dict(data)
    assert any("sm_86 code runs on sm_89" in w for w in plan.warnings)


torch = pytest.importorskip("torch")


def test_mfu_leaves_out_the_recompute_of_activation_checkpointing() -> None:
    from planner.measure.flops import count_flops
    from planner.measure.workloads import reference_builder
    from planner.spec.measure import MeasureSpec, resolve_reference

    spec = MeasureSpec(reference="transformer", d_model=32, layers=2, heads=2, seq_len=16,
                       vocab=64)
    plain, _ = resolve_reference(spec, {})
    ckpt, _ = resolve_reference(spec, {"activation_checkpointing": True})
    model_flops = count_flops(reference_builder(ckpt, encoder=False), 2)[0]
    hardware = count_flops(reference_builder(ckpt, encoder=False), 2, recompute=True)[0]
    assert model_flops == count_flops(reference_builder(plain, encoder=False), 2)[0]
    assert hardware > model_flops        # the blocks' forward passes run twice


def test_alibi_bias_is_made_on_the_device() -> None:
    from planner.measure.workloads import _alibi

    heads, s = 4, 6
    bias = _alibi(heads, s, torch.device("cpu"), causal=False)
    slopes = torch.tensor([2 ** (-8 * (i + 1) / heads) for i in range(heads)])
    pos = torch.arange(s)
    want = slopes[:, None, None] * (pos[None, :] - pos[:, None]).float()[None]
    assert torch.allclose(bias[0], want)
    with torch.device("meta"):
        assert _alibi(heads, s, torch.device("meta"), causal=True).device.type == "meta"


@pytest.mark.filterwarnings("ignore::UserWarning")  # no CUDA here: the scaler passes through
def test_fp16_training_steps_through_a_grad_scaler() -> None:
    from planner.measure.memory import train_step
    from planner.measure.workloads import Workload

    model = torch.nn.Linear(4, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    w = Workload(model=model, optimizer=opt, make_batch=lambda b: (torch.randn(b, 4),))
    train_step(w, w.make_batch(2), 2, "fp16", "cuda")
    assert isinstance(w.scaler, torch.amp.GradScaler)
    train_step(w, w.make_batch(2), 1, "bf16", "cpu")   # bf16 needs no scaler
    w2 = Workload(model=model, optimizer=opt, make_batch=w.make_batch)
    train_step(w2, w2.make_batch(2), 1, "bf16", "cpu")
    assert w2.scaler is None


def test_a_cuda_index_reaches_the_device() -> None:
    from planner.cli.measure import _device
    from planner.measure import MeasureUnavailable
    from planner.measure.backend import make_backend
    from tests.fake_cuda import FakeCuda

    fake = FakeCuda()
    backend = fake.backend(1)
    assert backend.index == 1 and fake.index == 1
    assert _device("cuda:1") == "cuda:1" and _device("auto") == "auto"
    with pytest.raises(InputError):
        _device("cpu:1")
    if not torch.cuda.is_available():
        with pytest.raises(MeasureUnavailable):
            make_backend("cuda:1", None)
    with pytest.raises(MeasureUnavailable, match="no CUDA device 5"):
        fake.backend(5)


def test_a_plan_on_several_cards_from_entered_figures_says_how_it_took_them() -> None:
    data = shipped("ablation-7d")
    a = data["ablation"]
    a.update(cards_per_run=2, effective_batch=a["micro_batch"] * a["accumulation"] * 2)
    plan = plan_dict(data)
    assert any("2 cards per run: the entered step time and peak are taken as a run on 2 "
               "cards" in d for d in plan.decisions)

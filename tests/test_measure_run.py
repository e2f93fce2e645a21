"""Measuring presets on the CPU with tiny models: every configuration, the batch search and
its out-of-memory recovery (on the fake allocator of `tests/fake_cuda.py`), progress,
cancellation, the factory protocol and its errors."""

from __future__ import annotations

import threading
from typing import Any

import pytest

torch = pytest.importorskip("torch")
from torch import nn  # noqa: E402

from planner.campaign import plan_campaign  # noqa: E402
from planner.errors import InputError  # noqa: E402
from planner.measure import (  # noqa: E402
    MeasureOOM,
    MeasureProgress,
    MeasureUnavailable,
    measure_preset,
)
from planner.measure.runner import run  # noqa: E402
from planner.measure.search import choose, largest_micro_batch  # noqa: E402
from planner.spec.catalog import load_catalog  # noqa: E402
from planner.spec.loading import parse_preset  # noqa: E402
from planner.spec.preset import Preset  # noqa: E402
from tests.conftest import CREATED, shipped  # noqa: E402

TINY = {"reference": "transformer", "d_model": 32, "layers": 1, "heads": 2, "seq_len": 16,
        "vocab": 64, "dtype": "fp32", "warmup_steps": 1, "steps": 2}


def tiny_preset(**measure: Any) -> Preset:
    data = shipped("ablation-3d")
    a = data["ablation"]
    a.update(micro_batch=4, accumulation=2, effective_batch=8, measure={**TINY, **measure})
    a["baseline"]["factors"]["data"] = "full"
    a["variants"].append({"name": "no-code", "changes": {"data": "no-code"},
                          "step_time_s": {"value": 3.6, "source": "entered"},
                          "peak_memory_gib": {"value": 31.5, "source": "entered"}})
    return parse_preset(data, "tiny.toml")


# --- the search, on its own ---------------------------------------------------------------

def test_search_respects_the_budget() -> None:
    def peak(m: int) -> float:
        return 2.0 + 0.5 * m

    for start in (1, 5, 16, 40):
        s = largest_micro_batch(peak, 10.0, start=start, limit=64)
        assert s.largest == 16
        assert all(p is None or p <= 10.0 or m > 16 for m, p in s.tried)
        assert max(m for m, _ in s.tried) <= 64
    assert largest_micro_batch(peak, 100.0, start=4, limit=32).largest == 32
    assert largest_micro_batch(peak, 1.0, start=4, limit=32).largest == 0
    assert largest_micro_batch(peak, 10.0, start=4, limit=64).per_sample() == pytest.approx(0.5)


def test_search_recovers_from_out_of_memory() -> None:
    recovered: list[int] = []

    def peak(m: int) -> float:
        if m > 12:  # the allocator fails before the budget is reached
            raise torch.OutOfMemoryError(f"CUDA out of memory (injected at {m})")
        return 0.1 * m

    s = largest_micro_batch(peak, 40.0, start=8, limit=64,
                            oom_errors=(torch.OutOfMemoryError,),
                            recover=lambda: recovered.append(1))
    assert s.largest == 12
    assert s.recoveries == len(recovered) >= 1
    assert (16, None) in s.tried


def test_choice_keeps_the_effective_batch() -> None:
    assert choose(64, 16, 4) == (16, 4)      # never above the preset's micro-batch
    assert choose(12, 16, 4) == (8, 8)       # largest divisor of 64 that fits
    assert choose(3, 6, 1) == (3, 2)
    assert choose(0, 16, 4) is None


# --- whole presets on the CPU ---------------------------------------------------------------

def test_measure_every_configuration_with_progress() -> None:
    seen: list[MeasureProgress] = []
    m = measure_preset(tiny_preset(), load_catalog(), progress=seen.append, threads=1)
    names = [c.config for c in m.configs]
    assert names == ["baseline", "no-aux-loss", "no-code"]
    assert m.device.kind == "cpu" and m.device.threads == 1 and not m.partial
    assert m.target_card == "a6000" and m.dtype == "fp32"
    base, no_aux, no_code = m.configs
    assert base.step_time is not None and base.step_time.steps == 2
    assert base.memory.method == "fake-tensor" and base.memory.weights_gib
    assert base.flops_per_step > no_aux.flops_per_step > 0   # the aux head costs FLOPs
    assert base.batch is not None and base.batch.largest == 8 and not base.batch.reduced
    assert (base.micro_batch, base.accumulation) == (4, 2)
    # `data` does not change the step: measured once, reused, and said so.
    assert no_code.same_as == "baseline" and no_code.ignored_factors == ["data"]
    assert no_code.factors["data"] == "no-code"
    assert [p.done for p in seen] == sorted(p.done for p in seen)
    assert seen[-1].done == seen[-1].total
    plan = plan_campaign(tiny_preset(), load_catalog(), measurements=m, created=CREATED)
    fig = plan.assumptions.figures[0]
    assert fig.peak_memory_gib.source == "measured"
    assert "fake-tensor estimate" in fig.peak_memory_gib.device
    # A CPU measurement is a smoke test: its memory is used, the step times are kept.
    assert fig.step_time_s.source == "entered"
    assert "measured on CPU: memory used, step times kept" in plan.decisions
    assert plan.assumptions.measurements is not None


def test_cancel_returns_what_was_measured_marked_partial() -> None:
    cancel = threading.Event()

    def progress(p: MeasureProgress) -> None:
        if p.label.startswith("no-aux-loss: step 1"):
            cancel.set()

    m = measure_preset(tiny_preset(), load_catalog(), progress=progress, cancel=cancel,
                       threads=1)
    assert m.partial
    assert [c.config for c in m.configs] == ["baseline", "no-aux-loss"]
    assert m.configs[1].step_time is not None and m.configs[1].step_time.steps == 1
    assert any("stopped early" in f for f in m.configs[1].flags)


def test_batch_search_on_the_cuda_path_keeps_the_effective_batch() -> None:
    from tests.fake_cuda import FakeCuda

    fake = FakeCuda(scale=100000)
    torch.set_num_threads(1)
    preset = tiny_preset()
    with fake.tracking():
        m = run(preset, load_catalog(), steps=2, progress=None, cancel=None, device="cpu",
                threads=1, source=None, command="", backend=fake.backend())
    base = m.configs[0]
    assert base.batch is not None
    assert base.batch.method == "cuda" and base.batch.oom_recoveries >= 1
    assert base.batch.largest < 4 and base.batch.reduced
    assert base.micro_batch * base.accumulation == 8      # 8 samples per step kept
    assert base.memory.method == "cuda" and base.memory.reserved_gib is not None
    assert max(fake.fractions) == pytest.approx(base.batch.budget_gib * 2**30 / fake.total)
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED)
    assert any(f"micro-batch {base.micro_batch} × accumulation {base.accumulation} keeps the "
               "effective batch 8" in d for d in plan.decisions)
    assert plan.runs[0].micro_batch == base.micro_batch and plan.runs[0].effective_batch == 8


def test_unrecoverable_out_of_memory_is_its_own_error() -> None:
    from tests.fake_cuda import FakeCuda

    fake = FakeCuda(scale=20000)

    def progress(p: MeasureProgress) -> None:
        if p.label == "no-aux-loss: sized":
            fake.fail_always = True          # from now on nothing fits: twice in a row

    with (pytest.raises(MeasureOOM, match="out of memory at micro-batch 4 × 2") as info,
          fake.tracking()):
        run(tiny_preset(), load_catalog(), steps=2, progress=progress, cancel=None,
            device="cpu", threads=1, source=None, command="", backend=fake.backend())
    partial = info.value.partial
    assert partial is not None and partial.partial
    assert [c.config for c in partial.configs] == ["baseline"]


# --- the factory protocol -------------------------------------------------------------------

def build_mlp(factors: dict, *, device: Any, dtype: str, seq_len: int, width: int = 16
              ) -> tuple:
    """A factory as a user writes one: the variant's factors pick the hidden size."""
    hidden = 64 if factors.get("aux_loss") else 32
    model = nn.Sequential(nn.Linear(width, hidden), nn.ReLU(), nn.Linear(hidden, 1)).to(device)
    return model, torch.optim.Adam(model.parameters()), lambda b: (
        torch.randn(b, width, device=device),)


def broken_factory(factors: dict, **_: Any) -> tuple:
    raise RuntimeError("no such checkpoint")


def wrong_factory(factors: dict, **_: Any) -> str:
    return "model"


class _Dict(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(4, 4)

    def forward(self, x: Any) -> dict:
        return {"loss": self.lin(x).sum()}


def dict_factory(factors: dict, *, device: Any, **_: Any) -> tuple:
    model = _Dict().to(device)
    return model, torch.optim.SGD(model.parameters(), lr=0.1), lambda b: (
        torch.randn(b, 4, device=device),)


def test_factory_receives_each_configurations_factors() -> None:
    preset = tiny_preset(reference=None, factory="tests.test_measure_run:build_mlp",
                         options={"width": 8})
    m = measure_preset(preset, load_catalog(), threads=1)
    base, no_aux = m.configs[0], m.configs[1]
    assert base.params == 8 * 64 + 64 + 64 + 1 and no_aux.params == 8 * 32 + 32 + 32 + 1
    assert m.workload.source == "factory" and not base.same_as


@pytest.mark.parametrize(("factory", "message"), [
    ("no_such_module_xyz:build", "cannot import 'no_such_module_xyz'"),
    ("tests.test_measure_run:missing", "has no function 'missing'"),
    ("tests.test_measure_run:broken_factory", "failed: RuntimeError: no such checkpoint"),
    ("tests.test_measure_run:wrong_factory", "must return (model, optimizer or None"),
    ("tests.test_measure_run:dict_factory", "model failed in a step: TypeError: the model "
                                            "returned dict, not a tensor"),
])
def test_bad_factories_are_input_errors(factory: str, message: str) -> None:
    preset = tiny_preset(reference=None, factory=factory)
    with pytest.raises(InputError) as info:
        measure_preset(preset, load_catalog(), threads=1)
    assert message in str(info.value)
    assert info.value.field == "ablation.measure.factory"


def test_a_factory_string_must_name_module_and_function() -> None:
    with pytest.raises(InputError) as info:
        tiny_preset(reference=None, factory="just-a-name")
    assert "ablation.measure.factory" in str(info.value)


def test_reference_factor_values_are_checked() -> None:
    data = tiny_preset().model_dump(mode="json", exclude_none=True)
    data["ablation"]["variants"][0]["changes"] = {"norm": "batchnorm"}
    preset = parse_preset(data, "tiny.toml")
    with pytest.raises(InputError, match="not a reference norm") as info:
        measure_preset(preset, load_catalog(), threads=1)
    assert info.value.field == "ablation.variants[0].changes.norm"


def test_without_torch_measurement_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    import planner.measure as measure

    monkeypatch.setattr(measure, "torch_available", lambda: False)
    with pytest.raises(MeasureUnavailable, match="torch is not installed"):
        measure.measure_preset(tiny_preset(), load_catalog())


def test_embedding_reference_encoder_gives_a_throughput() -> None:
    data = shipped("embedding-3d")
    data["embedding"].update(measure={**TINY, "reference": "encoder"}, truncation_tokens=64,
                             token_budget=512)
    preset = parse_preset(data, "emb.toml")
    m = measure_preset(preset, load_catalog(), threads=1)
    (cm,) = m.configs
    assert cm.config == "embedding" and cm.step_time is not None
    assert (cm.micro_batch, cm.tokens_per_step) == (8, 512)   # the longest texts, 512 // 64
    assert cm.trainable_params == cm.params and cm.memory.gradients_gib == 0
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED)
    tput = plan.assumptions.throughput_tokens_per_s
    # Measured on a CPU: the memory is checked, the entered throughput is kept.
    assert tput is not None and tput.source == "entered"
    assert "measured on CPU: memory used, throughput kept" in plan.warnings

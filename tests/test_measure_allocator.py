"""Measurement under the caching allocator, on a fake CUDA device that follows its rules
(`tests/fake_cuda.py`): the fake itself; the batch search against a brute-force largest
micro-batch (training, with and without accumulation, several limits and starting sizes);
recorded peaks and retries against a clean run; out-of-memory errors mid-search, in a timed
step and while building a model; a measuring card smaller than the target."""

from __future__ import annotations

import gc
from typing import Any

import pytest

torch = pytest.importorskip("torch")

from planner.campaign import plan_campaign  # noqa: E402
from planner.figures.measured import require_spec  # noqa: E402
from planner.figures.measurements import Measurements  # noqa: E402
from planner.measure.backend import GIB  # noqa: E402
from planner.measure.jobs import jobs  # noqa: E402
from planner.measure.memory import train_step  # noqa: E402
from planner.measure.runner import run  # noqa: E402
from planner.measure.search import choose  # noqa: E402
from planner.spec.catalog import load_catalog  # noqa: E402
from planner.spec.loading import parse_preset  # noqa: E402
from planner.spec.preset import Preset  # noqa: E402
from tests.conftest import CREATED, shipped  # noqa: E402
from tests.fake_cuda import FakeCuda  # noqa: E402

TINY = {"reference": "transformer", "d_model": 32, "layers": 1, "heads": 2, "seq_len": 16,
        "vocab": 64, "dtype": "fp32", "warmup_steps": 1, "steps": 2}
BUDGET = load_catalog().cards["a6000"].allocatable_gib - 2.0   # the preset's 2 GiB margin


@pytest.fixture(autouse=True, scope="module")
def _quick() -> Any:
    # One thread (the CPU is shared) and the objects of the imports frozen out of the
    # collector: the clean slate's gc.collect() then costs milliseconds.
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    gc.freeze()
    yield
    torch.set_num_threads(threads)


def preset(micro_batch: int, accumulation: int, *, variants: list[dict] | None = None,
           cards_per_run: int = 1, **measure: Any) -> Preset:
    data = shipped("ablation-3d")
    a = data["ablation"]
    a.update(micro_batch=micro_batch, accumulation=accumulation, cards_per_run=cards_per_run,
             effective_batch=micro_batch * accumulation * cards_per_run,
             measure={**TINY, **measure}, variants=variants or [])
    return parse_preset(data, "tiny.toml")


def measured(p: Preset, fake: FakeCuda, **kwargs: Any) -> Measurements:
    with fake.tracking():
        return run(p, load_catalog(), steps=None, progress=kwargs.pop("progress", None),
                   cancel=None, device="cpu", threads=1, source=None, command="",
                   backend=fake.backend(), **kwargs)


def clean_run(p: Preset, scale: float, m: int, acc: int, config: int = 0,
              total_mib: float = 48676) -> tuple[float, int] | None:
    """A fresh process running micro-batch m × acc under the cap, written out by hand:
    a throwaway step, then two steps; (their peak reserved GiB, their retries), or None
    when it runs out of memory."""
    fake = FakeCuda(total_mib, scale=scale)
    job = jobs(p, require_spec(p), None)[config]
    fake.set_per_process_memory_fraction(BUDGET * GIB / fake.total)
    peak, retries = 0, 0
    with fake.tracking():
        try:
            w = job.build(torch.device("cpu"))
            data = w.make_batch(m)
            train_step(w, data, acc, "fp32", "cuda")
            for _ in range(2):
                fake.reset_peak_memory_stats()
                before = fake.retries
                train_step(w, data, acc, "fp32", "cuda")
                peak = max(peak, fake.peak_reserved)
                retries += fake.retries - before
        except torch.OutOfMemoryError:
            return None
    return peak / GIB, retries


def true_limit(p: Preset, scale: float, per_card: int) -> int:
    """The largest micro-batch a clean run can take (probing accumulation as the search
    does: two micro-batches where the per-card batch allows), checked for every size."""
    fit = [clean_run(p, scale, m, min(per_card // m, 2)) is not None
           for m in range(1, per_card + 1)]
    largest = max((m for m, ok in enumerate(fit, start=1) if ok), default=0)
    # The search assumes that what fits at m fits below m: check it, for every size.
    assert all(fit[:largest]), fit
    return largest


# --- the fake follows the allocator's rules ---------------------------------------------------

def test_the_fake_follows_the_caching_allocators_rules() -> None:
    fake = FakeCuda(100)
    mib = 2**20
    with fake.tracking():
        a = torch.empty(10 * mib, dtype=torch.uint8)
        assert (fake.allocated, fake.reserved) == (10 * mib, 10 * mib)
        del a                                        # freed, but still reserved
        assert (fake.allocated, fake.reserved) == (0, 10 * mib)
        fake.reset_peak_memory_stats()              # the peak is the current value
        assert fake.memory_stats()["reserved_bytes.all.peak"] == 10 * mib
        b = torch.empty(5 * mib, dtype=torch.uint8)  # served from the cache
        assert fake.reserved == 10 * mib and fake.allocated == 5 * mib
        del b
        fake.set_per_process_memory_fraction(0.3)   # the fraction caps reserved memory
        c = torch.empty(25 * mib, dtype=torch.uint8)  # a miss: cache freed, retried, served
        assert fake.memory_stats()["num_alloc_retries"] == 1 and fake.reserved == 25 * mib
        with pytest.raises(torch.OutOfMemoryError):
            torch.empty(10 * mib, dtype=torch.uint8)
        assert fake.memory_stats()["num_alloc_retries"] == 2
        fake.reset_accumulated_memory_stats()
        assert fake.memory_stats()["num_alloc_retries"] == 0
        del c
        fake.empty_cache()
        assert fake.reserved == 0

        def fail() -> None:
            held = torch.empty(20 * mib, dtype=torch.uint8)  # noqa: F841
            raise RuntimeError("a step fails")

        try:
            fail()
        except RuntimeError:
            inside = fake.allocated           # the traceback keeps the frame's tensor
        assert inside == 20 * mib and fake.allocated == 0


# --- the search finds the true limit ----------------------------------------------------------

@pytest.mark.parametrize(("scale", "micro_batch", "accumulation"), [
    (30000, 16, 1), (45000, 16, 1), (45000, 4, 4), (70000, 2, 8), (70000, 8, 2),
    (120000, 1, 16), (45000, 1, 16),
])
def test_the_search_returns_the_true_limit(scale: float, micro_batch: int,
                                           accumulation: int) -> None:
    p = preset(micro_batch, accumulation)
    per_card = micro_batch * accumulation
    limit = true_limit(p, scale, per_card)
    m = measured(p, FakeCuda(scale=scale))
    cm = m.configs[0]
    assert cm.batch is not None and cm.batch.method == "cuda"
    assert cm.batch.largest == limit
    assert (cm.batch.micro_batch, cm.batch.accumulation) == choose(limit, micro_batch,
                                                                   accumulation)
    if limit < per_card:
        assert cm.batch.oom_recoveries >= 1        # probes above the limit ran out of memory
    # The recorded figures are those of a clean run of the chosen configuration.
    clean = clean_run(p, scale, cm.micro_batch, cm.accumulation)
    assert clean is not None
    assert cm.memory.reserved_gib == pytest.approx(clean[0], abs=1e-9)
    assert cm.memory.num_alloc_retries == clean[1]
    assert cm.memory.reserved_gib <= BUDGET
    assert cm.step_time is not None and cm.step_time.steps == 2
    # per-sample growth from clean probes: positive, and below the peak
    if limit > 1:
        assert cm.memory.per_sample_gib is not None
        assert 0 < cm.memory.per_sample_gib < cm.memory.reserved_gib


def test_a_preset_start_above_the_limit_gets_the_largest_divisor() -> None:
    # The case the old search answered "does not fit": 32 × 2 with a true limit near 16.
    p = preset(32, 2)
    limit = true_limit(p, 30000, 64)
    assert 8 < limit < 32
    cm = measured(p, FakeCuda(scale=30000)).configs[0]
    assert cm.batch is not None and cm.batch.largest == limit
    assert (cm.micro_batch, cm.accumulation) == choose(limit, 32, 2)
    plan = plan_campaign(p, load_catalog(), measurements=measured(p, FakeCuda(scale=30000)),
                         created=CREATED)
    assert plan.assumptions.figures[0].fits
    assert plan.runs[0].micro_batch == cm.micro_batch


# --- out of memory in a timed step, while building, on a smaller card ------------------------

@pytest.mark.parametrize("micro_batch, accumulation", [(4, 2), (16, 1)])
def test_a_timed_step_that_ran_out_of_memory_is_discarded(micro_batch: int,
                                                           accumulation: int) -> None:
    # After the recovery the steps run from an emptied cache: unless one clean step lays
    # it out again, the peak recorded at micro-batch 16 is 1.5 GiB off a clean run's.
    p = preset(micro_batch, accumulation)
    fake = FakeCuda(scale=20000)

    def progress(prog: Any) -> None:
        if prog.label.endswith("step 1/2") and fake.fail_at_call is None:
            fake.fail_at_call = fake.calls + 7          # inside the next step

    m = measured(p, fake, progress=progress)
    cm = m.configs[0]
    assert cm.step_time is not None and cm.step_time.steps == 2
    assert any("ran out of memory and were discarded" in f for f in cm.flags)
    clean = clean_run(p, 20000, cm.micro_batch, cm.accumulation)
    assert clean is not None
    assert cm.memory.reserved_gib == pytest.approx(clean[0], abs=1e-9)
    assert cm.memory.num_alloc_retries == clean[1] == 0   # the failed step's retry is not kept


def test_out_of_memory_while_building_keeps_what_was_measured() -> None:
    big = {"name": "wide", "changes": {"d_model": 512}, "waive_one_factor": "a test",
           "step_time_s": {"value": 3.6, "source": "entered"},
           "peak_memory_gib": {"value": 31.5, "source": "entered"}}
    small = {**big, "name": "narrow", "changes": {"d_model": 16}}
    p = preset(4, 2, variants=[big, small])
    m = measured(p, FakeCuda(scale=20000))
    base, wide, narrow = m.configs
    assert base.step_time is not None and narrow.step_time is not None
    assert wide.step_time is None and wide.batch is not None and wide.batch.largest == 0
    assert any("out of memory while building the model" in f for f in wide.flags)
    plan = plan_campaign(p, load_catalog(), measurements=m, created=CREATED)
    fits = {f.config: f.fits for f in plan.assumptions.figures}
    assert fits == {"baseline": True, "wide": False, "narrow": True}


def test_a_smaller_measuring_card_labels_its_search() -> None:
    p = preset(16, 1)
    fake = FakeCuda(24563, scale=20000, name="NVIDIA GeForce RTX 4090", cc=(8, 9))
    cm = measured(p, fake).configs[0]
    assert cm.batch is not None and cm.batch.card == "rtx4090"
    assert cm.batch.budget_gib == pytest.approx(24563 / 1024 - 0.75 - 2.0, abs=1e-3)
    assert any("the micro-batch search is for rtx4090" in f for f in cm.flags)
    assert max(fake.fractions) <= 1.0               # never clamped: capped within the card


def test_a_run_on_several_cards_is_sized_with_ddp_memory_and_planned_with_all_reduce() -> None:
    p = preset(4, 2, cards_per_run=2)
    m = measured(p, FakeCuda(scale=20000))
    cm = m.configs[0]
    assert cm.batch is not None and cm.batch.budget_gib < BUDGET
    assert any("sized for 2 cards per run" in f for f in cm.flags)
    plan = plan_campaign(p, load_catalog(), measurements=m, created=CREATED)
    fig = plan.assumptions.figures[0]
    assert "ring all-reduce" in fig.step_time_s.note and "PCIe" not in fig.step_time_s.note
    assert fig.step_time_s.value > cm.step_time.median_s  # type: ignore[union-attr]
    assert any("DDP gradient buckets" in n for n in plan.decisions)

"""Measuring a preset: every configuration, sized for the target card, then timed.

Per configuration (the baseline and every variant, or one embedding batch):
1. count FLOPs per micro-batch on the meta device;
2. find the largest micro-batch that fits the target card — real steps under a per-process
   memory cap on CUDA, the fake-tensor estimate elsewhere — and choose micro-batch ×
   accumulation keeping the preset's effective batch;
3. warm up, reset the peak statistics, time the steps; record the peak memory (allocator
   statistics on CUDA, the fake-tensor estimate with its breakdown elsewhere).
Inputs are always as long as the longest the run will see.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import torch

from planner.catalog import Card, Catalog
from planner.errors import InputError
from planner.matrix import memory_budget
from planner.measure import MeasureOOM, MeasureProgress
from planner.measure.backend import GIB, Backend, make_backend
from planner.measure.flops import count_flops
from planner.measure.jobs import Job, jobs
from planner.measure.memory import Estimate, fake_estimate, forward_only, train_step
from planner.measure.search import choose, largest_micro_batch
from planner.measure.workloads import Workload
from planner.measure_spec import MeasureSpec
from planner.measured import require_spec, workload_fingerprint
from planner.measurements import (
    BatchChoice,
    ConfigMeasurement,
    Measurements,
    Memory,
    StepTime,
)
from planner.measurements import (
    Workload as WorkloadRecord,
)
from planner.preset import Preset
from planner.scaling import card_rates, mfu_flags


class _Ticker:
    def __init__(self, total: int, callback: Callable[[MeasureProgress], None] | None) -> None:
        self.done, self.total, self.callback = 0, total, callback

    def tick(self, label: str, units: int = 1) -> None:
        self.done = min(self.done + units, self.total)
        if self.callback is not None:
            self.callback(MeasureProgress(self.done, self.total, label))


class _Measurer:
    def __init__(self, backend: Backend, card_key: str, card: Card, budget: float,
                 dtype: str, steps: int, warmup: int, ticker: _Ticker,
                 cancel: threading.Event, device_peak: float | None) -> None:
        self.b, self.card_key, self.card, self.budget = backend, card_key, card, budget
        self.dtype, self.steps, self.warmup, self.ticker = dtype, steps, warmup, ticker
        self.cancel, self.device_peak = cancel, device_peak

    def units(self) -> int:
        return 1 + self.warmup + self.steps

    def measure(self, job: Job) -> ConfigMeasurement | None:
        """One configuration; None when cancelled before anything was timed."""
        w: Workload | None = None
        batch: BatchChoice | None = None
        estimates: dict[int, Estimate] = {}
        run_mb, run_acc, per_sample = job.micro_batch, job.accumulation, None
        if job.training:
            w, batch, per_sample, estimates = self._size(job)
            if batch.micro_batch is not None and batch.accumulation is not None:
                run_mb, run_acc = batch.micro_batch, batch.accumulation
        self.ticker.tick(f"{job.name}: sized")
        flops, params, trainable = count_flops(job.build, run_mb, training=job.training)
        flops_step = flops * run_acc
        fits = batch is None or batch.micro_batch is not None
        times: list[float] = []
        peak: tuple[float, float, int] | None = None
        if fits:
            times, peak = self._time(job, w, run_mb, run_acc)
            if not times:
                return None
        else:
            self.ticker.tick(f"{job.name}: does not fit {self.card_key}", self.units() - 1)
        memory = self._memory(job, run_mb, run_acc, peak, per_sample, estimates)
        step_time = None
        flags: list[str] = []
        achieved = mfu = None
        if times:
            # Inclusive quantiles stay inside the data (the default extrapolates for few steps).
            q = (statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1
                 else [times[0]] * 9)
            median = statistics.median(times)
            step_time = StepTime(median_s=median, p10_s=q[0], p90_s=q[-1], steps=len(times))
            achieved = flops_step / median / 1e12
            mfu = achieved / self.device_peak if self.device_peak else None
            flags += mfu_flags(mfu)
            if len(times) < self.steps:
                flags.append(f"stopped early: {len(times)} of {self.steps} steps timed")
        if memory.num_alloc_retries:
            flags.append(f"the allocator retried {memory.num_alloc_retries} times: memory is "
                         "tight at this micro-batch")
        return ConfigMeasurement(
            config=job.name, factors=job.factors, ignored_factors=job.ignored, params=params,
            trainable_params=trainable, micro_batch=run_mb, accumulation=run_acc,
            tokens_per_step=run_mb * run_acc * job.seq_len, step_time=step_time,
            memory=memory, batch=batch, flops_per_step=float(flops_step),
            achieved_tflops=achieved, mfu=mfu, flags=flags)

    def _size(self, job: Job) -> tuple[Workload | None, BatchChoice, float | None,
                                       dict[int, Estimate]]:
        per_card = job.micro_batch * job.accumulation
        estimates: dict[int, Estimate] = {}
        w: Workload | None = None
        if self.b.kind == "cuda":
            w = job.build(self.b.device)
            self.b.cap(self.card.memory_gib)
            work = w

            def peak(m: int) -> float:
                data = work.make_batch(m)
                self.b.reset_peak()
                train_step(work, data, min(per_card // m, 2), self.dtype, self.b.kind)
                got = self.b.peak()
                assert got is not None
                return got[1]

            def recover() -> None:
                if work.optimizer is not None:
                    work.optimizer.zero_grad(set_to_none=True)
                self.b.recover()
        else:
            def peak(m: int) -> float:
                estimates[m] = fake_estimate(job.build, m, self.dtype, per_card // m or 1)
                return estimates[m].peak / GIB

            def recover() -> None:
                self.b.recover()
        found = largest_micro_batch(peak, self.budget, start=job.micro_batch, limit=per_card,
                                    oom_errors=self.b.oom_errors, recover=recover,
                                    stop=self.cancel.is_set)
        picked = choose(found.largest, job.micro_batch, job.accumulation)
        choice = BatchChoice(
            card=self.card_key, budget_gib=round(self.budget, 3),
            method="cuda" if self.b.kind == "cuda" else "fake-tensor", largest=found.largest,
            limit=per_card, probes=len(found.tried), oom_recoveries=found.recoveries,
            micro_batch=picked[0] if picked else None,
            accumulation=picked[1] if picked else None,
            reduced=bool(picked and picked[0] < job.micro_batch))
        return w, choice, found.per_sample(), estimates

    def _time(self, job: Job, w: Workload | None, mb: int, acc: int
              ) -> tuple[list[float], tuple[float, float, int] | None]:
        w = w or job.build(self.b.device)
        data = w.make_batch(mb)
        kind = self.b.kind
        work = w

        def step() -> None:
            if job.training:
                train_step(work, data, acc, self.dtype, kind)
            else:
                forward_only(work, data, self.dtype, kind)

        def guarded() -> None:
            try:
                step()
            except self.b.oom_errors:
                self.b.recover()
                try:
                    step()
                except self.b.oom_errors:
                    raise MeasureOOM(
                        f"{job.name}: out of memory at micro-batch {mb} × {acc} on "
                        f"{self.b.device}, even after emptying the cache: lower the batch "
                        "or measure on a card with more memory") from None

        for i in range(self.warmup):
            if self.cancel.is_set():
                return [], None
            guarded()
            self.ticker.tick(f"{job.name}: warm-up {i + 1}/{self.warmup}")
        self.b.reset_peak()
        times: list[float] = []
        for i in range(self.steps):
            if self.cancel.is_set():
                break
            times.append(self.b.time(guarded))
            self.ticker.tick(f"{job.name}: step {i + 1}/{self.steps}")
        return times, self.b.peak()

    def _memory(self, job: Job, mb: int, acc: int, peak: tuple[float, float, int] | None,
                per_sample: float | None, estimates: dict[int, Estimate]) -> Memory:
        if peak is not None:
            return Memory(method="cuda", peak_gib=max(peak[1], 1e-6), allocated_gib=peak[0],
                          reserved_gib=peak[1], num_alloc_retries=peak[2],
                          per_sample_gib=per_sample)
        est = estimates.get(mb) or fake_estimate(job.build, mb, self.dtype, acc)
        if per_sample is None or not estimates:
            other = mb // 2 if mb > 1 else 2
            second = estimates.get(other) or fake_estimate(job.build, other, self.dtype,
                                                           max(acc, 1))
            per_sample = max((est.peak - second.peak) / GIB / (mb - other), 0.0)
        return Memory(method="fake-tensor", peak_gib=max(est.gib("peak"), 1e-6),
                      weights_gib=est.gib("weights"), gradients_gib=est.gib("gradients"),
                      optimizer_gib=est.gib("optimizer"),
                      activations_gib=est.gib("activations"), per_sample_gib=per_sample)


def run(preset: Preset, catalog: Catalog, *, steps: int | None,
        progress: Callable[[MeasureProgress], None] | None, cancel: threading.Event | None,
        device: str, threads: int | None, source: str | None, command: str,
        backend: Backend | None = None) -> Measurements:
    """Measure every configuration of `preset`; see the module docstring."""
    spec = require_spec(preset, source)
    card = catalog.get(preset.campaign.card, file=source, field="campaign.card")
    todo = jobs(preset, spec, source)
    backend = backend or make_backend(device, threads)
    dev = backend.describe(catalog)
    backend.precision(spec.dtype)
    n = steps or spec.steps
    cancel = cancel or threading.Event()
    peak_tflops = (card_rates(catalog.cards[dev.card], spec.dtype).peak_tflops
                   if dev.card in catalog.cards else None)
    ticker = _Ticker(len(todo) * (1 + spec.warmup_steps + n), progress)
    m = _Measurer(backend, preset.campaign.card, card, memory_budget(card, preset.overheads),
                  spec.dtype, n, spec.warmup_steps, ticker, cancel, peak_tflops)
    configs: list[ConfigMeasurement] = []
    by_key: dict[str, ConfigMeasurement] = {}
    passthrough: tuple[type[BaseException], ...] = (InputError, *backend.oom_errors)
    for job in todo:
        if cancel.is_set():
            break
        if job.key and job.key in by_key:
            first = by_key[job.key]
            configs.append(first.model_copy(update={
                "config": job.name, "factors": job.factors, "same_as": first.config,
                "ignored_factors": job.ignored}))
            ticker.tick(f"{job.name}: same workload as {first.config}", m.units())
            continue
        try:
            cm = m.measure(job)
        except MeasureOOM as exc:
            exc.partial = _record(preset, spec, dev, configs, True, command)
            raise
        except passthrough:
            raise
        except Exception as exc:
            if not job.factory:
                raise
            # The user's model failed inside a step: bad input, said in one line.
            raise InputError(f"{job.name}: the factory's model failed in a step: "
                             f"{type(exc).__name__}: {exc}".splitlines()[0], file=source,
                             field=job.factory) from None
        backend.recover()  # the next configuration starts from an empty cache
        if cm is None:
            break
        configs.append(cm)
        if job.key:
            by_key[job.key] = cm
    return _record(preset, spec, dev, configs, cancel.is_set(), command)


def _record(preset: Preset, spec: MeasureSpec, dev: Any, configs: list[ConfigMeasurement],
            partial: bool, command: str) -> Measurements:
    t, e = preset.training, preset.embedding
    seq = (min(e.lengths.max, e.truncation_tokens) if e is not None
           else spec.seq_len)
    workload = WorkloadRecord(
        source="factory" if spec.factory else "reference", spec=spec.model_dump(mode="json",
                                                                                 exclude_none=True),
        micro_batch=t.micro_batch if t else (configs[0].micro_batch if configs else 1),
        accumulation=t.accumulation if t else 1, cards_per_run=t.cards_per_run if t else 1,
        seq_len=seq, fingerprint=workload_fingerprint(preset))
    return Measurements(
        preset=preset.campaign.name, kind=preset.campaign.kind,
        date=datetime.now(UTC).replace(microsecond=0).isoformat(), torch=torch.__version__,
        cuda=torch.version.cuda or "", dtype=spec.dtype, target_card=preset.campaign.card,
        device=dev, workload=workload, partial=partial, command=command, configs=configs)

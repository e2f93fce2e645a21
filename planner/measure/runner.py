"""Measuring a preset: every configuration, sized for the target card, then timed.

Per configuration (the baseline and every variant, or one embedding batch):
1. count FLOPs per micro-batch on the meta device;
2. find the largest micro-batch that fits the target card — steady-state probes, each from
   a clean slate, under a per-process cap at the budget on CUDA (usable memory less the
   CUDA context and the margin, less DDP's buckets for a run on several cards: "fits" means
   "ran without running out of memory"; see `planner.measure.probe`), the fake-tensor
   estimate elsewhere — and choose micro-batch × accumulation keeping the effective batch;
3. from a clean slate, warm up and time the chosen configuration; record its own peak and
   allocator retries (each timed step's), never the search's (allocator statistics on
   CUDA, the fake-tensor estimate with its breakdown elsewhere).
An out-of-memory error while building a model marks that configuration as not fitting and
the others are still measured.
Inputs are always as long as the longest the run will see.
"""

from __future__ import annotations

import statistics
import threading
from collections.abc import Callable

from planner.errors import InputError
from planner.figures.measured import require_spec
from planner.figures.measurements import (
    BatchChoice,
    ConfigMeasurement,
    Device,
    Measurements,
    Memory,
    StepTime,
)
from planner.figures.multicard import multi_card
from planner.figures.scaling import card_rates, mfu_flags
from planner.measure.backend import GIB, Backend, make_backend
from planner.measure.base import MeasureOOM, MeasureUnavailable
from planner.measure.flops import count_flops, count_params
from planner.measure.jobs import Job, jobs
from planner.measure.memory import Estimate, fake_estimate, forward_only, train_step
from planner.measure.probe import OutOfMemory, Timed, fresh, made, probe, ran, timed_run
from planner.measure.progress import MeasureProgress
from planner.measure.record import record
from planner.measure.search import choose, largest_micro_batch
from planner.measure.workloads import Workload
from planner.spec.catalog import Card, Catalog
from planner.spec.matrix import memory_budget
from planner.spec.preset import Preset


class _Ticker:
    def __init__(self, total: int, callback: Callable[[MeasureProgress], None] | None) -> None:
        self.done, self.total, self.callback = 0, total, callback

    def tick(self, label: str, units: int = 1) -> None:
        self.done = min(self.done + units, self.total)
        if self.callback is not None:
            self.callback(MeasureProgress(self.done, self.total, label))


class _Measurer:
    def __init__(self, backend: Backend, card_key: str, card: Card, budget: float,
                 margin: float, dtype: str, steps: int, warmup: int, ticker: _Ticker,
                 cancel: threading.Event, device_peak: float | None, dev: Device,
                 cards_per_run: int) -> None:
        self.b, self.card_key, self.card, self.budget = backend, card_key, card, budget
        self.margin, self.dev, self.cards_per_run = margin, dev, cards_per_run
        self.dtype, self.steps, self.warmup, self.ticker = dtype, steps, warmup, ticker
        self.cancel, self.device_peak = cancel, device_peak

    def units(self) -> int:
        return 1 + self.warmup + self.steps

    def _budget(self, job: Job) -> tuple[float, str, list[str]]:
        """The cap for this configuration, the card it stands for, and what to say."""
        budget, label, flags = self.budget, self.card_key, []
        if job.training:
            mc = multi_card(self.card, self.cards_per_run, count_params(job.build)[1])
            if mc is not None:
                budget -= mc.extra_gib
                flags.append(f"sized for {mc.cards} cards per run: {mc.memory_note()}")
        room = self.b.room_gib()
        if room is not None and budget > room:
            label = self.dev.card or self.dev.name
            budget = room - self.margin
            flags.append(f"measured on {self.dev.name}, which has {room:.2f} GiB for the "
                         f"allocator, less than the {self.budget:.2f} GiB budget of "
                         f"{self.card_key}: the micro-batch search is for {label}")
        return budget, label, flags

    def _build(self, job: Job) -> Workload | None:
        box: list[Workload] = []
        if ran(lambda: box.append(job.build(self.b.device)), self.b.oom_errors):
            return box[0]
        fresh(self.b, None)  # outside the handler: the half-built model is gone
        return None

    def measure(self, job: Job) -> ConfigMeasurement | None:
        """One configuration; None when cancelled before anything was timed."""
        budget, label, flags = self._budget(job)
        if budget <= 0:
            flags.append(f"no memory is left for the model on {label} (budget {budget:.2f} GiB)")
            return self._not_built(job, 1e-6, label, flags)
        w: Workload | None = None
        if self.b.kind == "cuda":
            self.b.cap(budget)  # before building: the weights count against the cap
            w = self._build(job)
            if w is None:
                return self._not_built(job, budget, label, flags)
        batch: BatchChoice | None = None
        estimates: dict[int, Estimate] = {}
        run_mb, run_acc, per_sample = job.micro_batch, job.accumulation, None
        if job.training:
            batch, per_sample, estimates = self._size(job, w, budget, label)
            if batch.micro_batch is not None and batch.accumulation is not None:
                run_mb, run_acc = batch.micro_batch, batch.accumulation
        self.ticker.tick(f"{job.name}: sized")
        model, params, trainable = count_flops(job.build, run_mb, training=job.training)
        hw = count_flops(job.build, run_mb, training=job.training, recompute=True)[0]
        fits = batch is None or batch.micro_batch is not None
        timed = Timed()
        if fits:
            timed = self._time(job, w, run_mb, run_acc)
            if not timed.times:
                return None
        else:
            self.ticker.tick(f"{job.name}: does not fit {label}", self.units() - 1)
        memory = self._memory(job, run_mb, run_acc, timed, per_sample, estimates)
        step_time = None
        achieved = mfu = hfu = None
        if timed.times:
            times = timed.times
            # Inclusive quantiles stay inside the data (the default extrapolates for few steps).
            q = (statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1
                 else [times[0]] * 9)
            median = statistics.median(times)
            step_time = StepTime(median_s=median, p10_s=q[0], p90_s=q[-1], steps=len(times))
            achieved = hw * run_acc / median / 1e12
            mfu = (model * run_acc / median / 1e12 / self.device_peak if self.device_peak
                   else None)
            hfu = achieved / self.device_peak if self.device_peak and hw != model else None
            flags += mfu_flags(mfu)
            if len(times) < self.steps:
                flags.append(f"stopped early: {len(times)} of {self.steps} steps timed")
        if timed.discarded:
            flags.append(f"{timed.discarded} timed step(s) ran out of memory and were "
                         "discarded: memory is tight at this micro-batch")
        if memory.num_alloc_retries:
            flags.append(f"the allocator retried {memory.num_alloc_retries} times in the "
                         "timed steps: memory is tight at this micro-batch")
        return ConfigMeasurement(
            config=job.name, factors=job.factors, ignored_factors=job.ignored, params=params,
            trainable_params=trainable, micro_batch=run_mb, accumulation=run_acc,
            tokens_per_step=run_mb * run_acc * job.seq_len, step_time=step_time,
            memory=memory, batch=batch, flops_per_step=float(hw * run_acc),
            model_flops_per_step=float(model * run_acc) if hw != model else None,
            achieved_tflops=achieved, mfu=mfu, hfu=hfu, flags=flags)

    def _not_built(self, job: Job, budget: float, label: str,
                   flags: list[str]) -> ConfigMeasurement:
        """The weights alone overflow the cap: recorded as not fitting, and the search
        goes on with the next configuration."""
        self.ticker.tick(f"{job.name}: does not fit {label}", self.units())
        flops, params, trainable = count_flops(job.build, 1, training=job.training,
                                               recompute=True)
        per_card = job.micro_batch * job.accumulation
        return ConfigMeasurement(
            config=job.name, factors=job.factors, ignored_factors=job.ignored, params=params,
            trainable_params=trainable, micro_batch=job.micro_batch,
            accumulation=job.accumulation, tokens_per_step=None,
            memory=Memory(method="cuda", peak_gib=budget),
            batch=BatchChoice(card=label, budget_gib=round(budget, 3), method="cuda",
                              largest=0, limit=per_card, probes=0, oom_recoveries=1),
            flops_per_step=float(flops * job.accumulation),
            flags=[*flags, f"out of memory while building the model under the {budget:.2f} "
                           "GiB cap: the weights alone do not fit (peak is the cap, a lower "
                           "bound)"])

    def _size(self, job: Job, w: Workload | None, budget: float, label: str
              ) -> tuple[BatchChoice, float | None, dict[int, Estimate]]:
        per_card = job.micro_batch * job.accumulation
        estimates: dict[int, Estimate] = {}
        peak: Callable[[int], float | None]
        if w is not None:
            work, kind = w, self.b.kind

            def step_at(m: int) -> Callable[[], None]:
                data = work.make_batch(m)
                acc = min(per_card // m, 2)
                return lambda: train_step(work, data, acc, self.dtype, kind)

            def peak(m: int) -> float | None:
                return probe(self.b, work, lambda: step_at(m))
        else:
            def peak(m: int) -> float | None:
                estimates[m] = fake_estimate(job.build, m, self.dtype, per_card // m or 1)
                return estimates[m].peak / GIB
        found = largest_micro_batch(peak, budget, start=job.micro_batch, limit=per_card,
                                    oom_errors=self.b.oom_errors, recover=self.b.clean_slate,
                                    stop=self.cancel.is_set)
        if w is not None and found.per_sample() is None and found.largest > 1:
            # One size ran: one more clean probe gives the growth per sample.
            half = found.largest // 2
            found.tried.append((half, peak(half)))
        picked = choose(found.largest, job.micro_batch, job.accumulation)
        choice = BatchChoice(
            card=label, budget_gib=round(budget, 3),
            method="cuda" if self.b.kind == "cuda" else "fake-tensor", largest=found.largest,
            limit=per_card, probes=len(found.tried), oom_recoveries=found.recoveries,
            micro_batch=picked[0] if picked else None,
            accumulation=picked[1] if picked else None,
            reduced=bool(picked and picked[0] < job.micro_batch))
        return choice, found.per_sample(), estimates

    def _time(self, job: Job, w: Workload | None, mb: int, acc: int) -> Timed:
        w = w or job.build(self.b.device)
        fresh(self.b, w)  # before the inputs: they must not land in the search's cache
        work = w
        data = made(self.b, lambda: work.make_batch(mb))
        kind = self.b.kind
        oom = MeasureOOM(
            f"{job.name}: out of memory at micro-batch {mb} × {acc} on {self.b.device}, "
            "twice in a row after emptying the cache: lower the batch or measure on a card "
            "with more memory")
        if data is None:
            raise oom

        def step() -> None:
            if job.training:
                train_step(work, data, acc, self.dtype, kind)
            else:
                forward_only(work, data, self.dtype, kind)

        try:
            return timed_run(self.b, w, step, self.warmup, self.steps, self.cancel.is_set,
                             lambda label: self.ticker.tick(f"{job.name}: {label}"))
        except OutOfMemory:
            raise oom from None

    def _memory(self, job: Job, mb: int, acc: int, timed: Timed, per_sample: float | None,
                estimates: dict[int, Estimate]) -> Memory:
        peak = timed.peak
        if peak is not None:
            return Memory(method="cuda", peak_gib=max(peak.reserved_gib, 1e-6),
                          allocated_gib=peak.allocated_gib, reserved_gib=peak.reserved_gib,
                          num_alloc_retries=timed.retries, per_sample_gib=per_sample)
        if self.b.kind == "cuda":  # not timed (does not fit): nothing to record but the cap
            return Memory(method="cuda", peak_gib=self.budget, per_sample_gib=per_sample)
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
    t = preset.training
    m = _Measurer(backend, preset.campaign.card, card, memory_budget(card, preset.overheads),
                  preset.overheads.memory_margin_gib, spec.dtype, n, spec.warmup_steps, ticker,
                  cancel, peak_tflops, dev, t.cards_per_run if t else 1)
    configs: list[ConfigMeasurement] = []
    by_key: dict[str, ConfigMeasurement] = {}
    passthrough: tuple[type[BaseException], ...] = (InputError, MeasureUnavailable,
                                                     *backend.oom_errors)
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
            exc.partial = record(preset, spec, dev, configs, True, command, source)
            raise
        except passthrough:
            raise
        except Exception as exc:
            if not job.factory:
                raise
            # The user's model failed inside a step: bad input, said in one line.
            whose = ("the model built from the config" if job.factory.endswith(".config")
                     else "the factory's model")
            raise InputError(f"{job.name}: {whose} failed in a step: "
                             f"{type(exc).__name__}: {exc}".splitlines()[0], file=source,
                             field=job.factory) from None
        backend.clean_slate()  # the next configuration starts from an empty cache
        if cm is None:
            break
        configs.append(cm)
        if job.key:
            by_key[job.key] = cm
    return record(preset, spec, dev, configs, cancel.is_set(), command, source)

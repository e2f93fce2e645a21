"""Worst-case sizing of an embedding campaign, on the longest texts of the corpus.

The widest batch of the campaign is the first one in length-grouped order: the longest
documents, padded to W = their truncated length, as many as the token budget allows. Its
memory grows with the rows (and its attention with W²), so the largest token budget is found
at that width: rows are grown then bisected (`planner.measure.search`) — by steady-state
probes of the worker's encode path, each from a clean slate, under a cap at the budget on
CUDA (usable memory less the CUDA context and the preset's margin; `planner.measure.probe`),
or by the fake-tensor estimate (`planner.measure.memory`) elsewhere. Then, from a clean
slate, the worker's whole path on those texts (tokenization, copies, forward, pooling) is
timed at the budget the preset will run with, and its own peak recorded.

The result is a `measurements.toml` the planner reads (`--measurements`): the throughput is
`measured` on the target card, `scaled` from another catalog card, or `analytic` from a CPU.
"""

from __future__ import annotations

import contextlib
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import torch

from planner.corpus.outputs import CorpusScan
from planner.corpus.records import read_at
from planner.errors import InputError
from planner.figures.measured import workload_fingerprint
from planner.figures.measurements import (
    BatchChoice,
    ConfigMeasurement,
    Measurements,
    Memory,
    StepTime,
)
from planner.figures.measurements import Workload as WorkloadRecord
from planner.measure.backend import GIB, Backend, make_backend
from planner.measure.flops import count_flops
from planner.measure.memory import fake_estimate
from planner.measure.probe import OutOfMemory, fresh, probe, ran, timed_run
from planner.measure.search import Search, largest_micro_batch
from planner.measure.workloads import Workload
from planner.spec.catalog import Catalog
from planner.spec.matrix import memory_budget
from planner.spec.preset import Preset

SEARCH_LIMIT_TOKENS = 1 << 24


@dataclass
class Sizing:
    """What the sizing found, and the measurements file that carries it."""

    width: int
    """Padded length of the worst-case batch."""
    rows_fit: int
    """Most rows of that width that fit."""
    budget_tokens: int
    """rows_fit × width: the largest token budget for the card."""
    run_budget: int
    """The budget timed: the preset's when it fits, the largest otherwise."""
    padded_per_s: float
    useful_per_s: float
    peak_gib: float
    search: Search
    measurements: Measurements


def _builder(enc: Any, rows: list[list[int]], width: int) -> Any:
    """A `planner.measure` builder: the campaign's model and a batch of the longest texts.
    Real weights on a real device; on meta or fake devices the same shapes with random
    weights (memory and FLOPs do not depend on the values). Either backend's encoder
    (`builtin` or `sentence-transformers`) gives both through `net` and `shape_model`."""
    template = torch.full((len(rows), width), enc.pad_id, dtype=torch.long)
    template_mask = torch.zeros((len(rows), width), dtype=torch.long)
    for i, row in enumerate(rows):
        template[i, : len(row)] = torch.tensor(row)
        template_mask[i, : len(row)] = 1

    def make_batch(m: int) -> tuple[torch.Tensor, torch.Tensor]:
        if _faking():
            # Shapes are all a fake-tensor estimate needs; real values cannot enter it.
            return (torch.zeros((m, width), dtype=torch.long),
                    torch.ones((m, width), dtype=torch.long))
        pick = torch.arange(m) % len(rows)
        return template[pick], template_mask[pick]

    def build(device: torch.device) -> Workload:
        model: torch.nn.Module = enc.net
        if device.type == "meta" or _faking():
            with device if device.type == "meta" else contextlib.nullcontext():
                model = enc.shape_model().eval().to(next(enc.net.parameters()).dtype)
        else:
            model = enc.net.to(device)

        def batch_on(m: int) -> tuple[torch.Tensor, ...]:
            return tuple(t.to(device) for t in make_batch(m))

        return Workload(model=model, optimizer=None, make_batch=batch_on)

    return build


def _faking() -> bool:
    from torch._guards import detect_fake_mode

    return detect_fake_mode() is not None


def longest_texts(scan: CorpusScan) -> list[str]:
    """The scan's longest documents, longest first."""
    texts = {r.offset: r.text or "" for r in read_at(scan.corpus, [d.offset for d in
                                                                    scan.longest],
                                                      scan.id_field, scan.text_field)}
    return [texts[d.offset] for d in scan.longest]


def longest_rows(enc: Any, scan: CorpusScan) -> list[list[int]]:
    """Token ids of the scan's longest documents, truncated as the plan says."""
    return enc.tokenize(longest_texts(scan))


def _backend(enc: Any) -> Backend:
    return make_backend(enc.device if enc.device.startswith("cuda") else "cpu", None)


def size(preset: Preset, catalog: Catalog, scan: CorpusScan, enc: Any, *,
         steps: int = 3, backend: Backend | None = None, command: str = "") -> Sizing:
    """Find the largest token budget for the preset's card, and time the preset's."""
    e = preset.embedding
    if e is None:
        raise InputError("not an embedding preset", field="campaign.kind")
    card = catalog.get(preset.campaign.card)
    budget_gib = memory_budget(card, preset.overheads)
    backend = backend or _backend(enc)
    dev = backend.describe(catalog)
    texts = longest_texts(scan)
    rows = enc.tokenize(texts)
    width = max(len(r) for r in rows)
    build = _builder(enc, rows, width)
    label, flags = preset.campaign.card, []
    room = backend.room_gib()
    if room is not None and budget_gib > room:
        label = dev.card or dev.name
        flags.append(f"sized on {dev.name}, which has {room:.2f} GiB for the allocator, less "
                     f"than the {budget_gib:.2f} GiB budget of {preset.campaign.card}: the "
                     f"largest batch is {label}'s")
        budget_gib = room - preset.overheads.memory_margin_gib

    def ids_of(m: int) -> list[list[int]]:
        return [rows[i % len(rows)] for i in range(m)]

    peak: Any
    if backend.kind == "cuda":
        backend.cap(budget_gib)  # before the weights move: they count against the cap
        box: list[Workload] = []
        if not ran(lambda: box.append(build(backend.device)), backend.oom_errors):
            fresh(backend, None)
            raise InputError(f"the weights of {e.model} alone do not fit {label} "
                             f"({budget_gib:.1f} GiB usable)", field="embedding.model")

        def step_at(m: int) -> Callable[[], None]:
            ids = ids_of(m)
            return lambda: enc.encode_ids(ids)

        def peak(m: int) -> float | None:
            return probe(backend, box[0], lambda: step_at(m))
    else:
        def peak(m: int) -> float | None:
            return fake_estimate(build, m, "fp32").peak / GIB
    start = max(1, e.grouped_budget // width)
    found = largest_micro_batch(peak, budget_gib, start=start,
                                limit=max(start, SEARCH_LIMIT_TOKENS // width),
                                oom_errors=backend.oom_errors, recover=backend.clean_slate)
    if found.largest == 0:
        raise InputError(f"not even one of the longest texts ({width} tokens) fits "
                         f"{label} ({budget_gib:.1f} GiB usable)",
                         field="embedding.truncation_tokens")
    run_rows = min(start, found.largest)
    batch_texts = [texts[i % len(texts)] for i in range(run_rows)]
    fresh(backend, None)
    # The worker's whole path is timed: tokenization, padding, the copies, the forward pass,
    # pooling and the copy back.
    try:
        timed = timed_run(backend, None, lambda: enc.encode(batch_texts), 1, steps,
                          lambda: False, lambda _: None)
    except OutOfMemory:
        raise InputError(f"out of memory at {run_rows} rows × {width} tokens twice in a row "
                         f"on {dev.name}: lower token_budget", field="embedding.token_budget"
                         ) from None
    times = timed.times
    median = statistics.median(times)
    useful = sum(len(rows[i % len(rows)]) for i in range(run_rows))
    flops, params, _ = count_flops(build, run_rows, training=False)
    if timed.peak is not None:
        p = timed.peak
        memory = Memory(method="cuda", peak_gib=max(p.reserved_gib, 1e-6),
                        allocated_gib=p.allocated_gib, reserved_gib=p.reserved_gib,
                        num_alloc_retries=timed.retries, per_sample_gib=found.per_sample())
    else:
        est = fake_estimate(build, run_rows, "fp32")
        memory = Memory(method="fake-tensor", peak_gib=max(est.gib("peak"), 1e-6),
                        weights_gib=est.gib("weights"), activations_gib=est.gib("activations"),
                        per_sample_gib=found.per_sample())
    if timed.discarded:
        flags.append(f"{timed.discarded} timed batch(es) ran out of memory and were discarded")
    choice = BatchChoice(card=label, budget_gib=round(budget_gib, 3),
                         method="cuda" if backend.kind == "cuda" else "fake-tensor",
                         largest=found.largest, limit=found.limit, probes=len(found.tried),
                         oom_recoveries=found.recoveries, micro_batch=run_rows, accumulation=1,
                         reduced=run_rows < start)
    q = statistics.quantiles(times, n=10, method="inclusive") if len(times) > 1 else times * 9
    cm = ConfigMeasurement(
        config="embedding", params=params, trainable_params=0, micro_batch=run_rows,
        tokens_per_step=run_rows * width,
        step_time=StepTime(median_s=median, p10_s=q[0], p90_s=q[-1], steps=len(times)),
        memory=memory, batch=choice, flops_per_step=float(flops),
        achieved_tflops=flops / median / 1e12,
        flags=[f"{scan.longest[0].tokens:,}-token longest text, batch of {run_rows} × {width} "
               f"padded tokens ({useful:,} useful), timed with tokenization and copies",
               *flags])
    timed_preset = preset.model_copy(update={"embedding": e.model_copy(
        update={"token_budget": run_rows * width})})
    record = Measurements(
        preset=preset.campaign.name, kind="embedding",
        date=datetime.now(UTC).replace(microsecond=0).isoformat(), torch=torch.__version__,
        cuda=torch.version.cuda or "", dtype=enc.dtype, target_card=preset.campaign.card,
        device=dev, command=command, configs=[cm],
        workload=WorkloadRecord(
            source="factory", micro_batch=run_rows, accumulation=1, seq_len=width,
            spec={"model": e.model, "model_sha256": enc.model_sha256,
                  "inputs": f"the {len(rows)} longest texts of {scan.corpus}"},
            fingerprint=workload_fingerprint(timed_preset)))
    return Sizing(width=width, rows_fit=found.largest, budget_tokens=found.largest * width,
                  run_budget=run_rows * width, padded_per_s=run_rows * width / median,
                  useful_per_s=useful / median, peak_gib=memory.peak_gib, search=found,
                  measurements=record)

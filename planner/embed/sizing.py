"""Worst-case sizing of an embedding campaign, on the longest texts of the corpus.

The widest batch of the campaign is the first one in length-grouped order: the longest
documents, padded to W = their truncated length, as many as the token budget allows. Its
memory grows with the rows (and its attention with W²), so the largest token budget is found
at that width: rows are grown then bisected (`planner.measure.search`) — by real forward
passes of the campaign's model under a cap at the card's memory on CUDA, recovering from
out-of-memory errors, or by the fake-tensor estimate (`planner.measure.memory`) elsewhere —
until the peak stays under the card's memory less the preset's margin. Then the model is
timed on those texts at the budget the preset will run with.

The result is a `measurements.toml` the planner reads (`--measurements`): the throughput is
`measured` on the target card, `scaled` from another catalog card, or `analytic` from a CPU.
"""

from __future__ import annotations

import contextlib
import statistics
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import torch

from planner.catalog import Catalog
from planner.corpus import read_at
from planner.corpus_plan import CorpusScan
from planner.embed.encoder import Encoder
from planner.errors import InputError
from planner.matrix import memory_budget
from planner.measure.backend import GIB, Backend, make_backend
from planner.measure.flops import count_flops
from planner.measure.memory import fake_estimate, forward_only
from planner.measure.search import Search, largest_micro_batch
from planner.measure.workloads import Workload
from planner.measured import workload_fingerprint
from planner.measurements import (
    BatchChoice,
    ConfigMeasurement,
    Measurements,
    Memory,
    StepTime,
)
from planner.measurements import Workload as WorkloadRecord
from planner.preset import Preset

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


def _builder(enc: Encoder, rows: list[list[int]], width: int) -> Any:
    """A `planner.measure` builder: the campaign's model and a batch of the longest texts.
    Real weights on a real device; on meta or fake devices the same shapes with random
    weights (memory and FLOPs do not depend on the values)."""
    from planner.embed.bert import Bert

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
                model = Bert(enc.net.config).eval().to(next(enc.net.parameters()).dtype)
        else:
            model = enc.net.to(device)

        def batch_on(m: int) -> tuple[torch.Tensor, ...]:
            return tuple(t.to(device) for t in make_batch(m))

        return Workload(model=model, optimizer=None, make_batch=batch_on)

    return build


def _faking() -> bool:
    from torch._guards import detect_fake_mode

    return detect_fake_mode() is not None


def longest_rows(enc: Encoder, scan: CorpusScan) -> list[list[int]]:
    """Token ids of the scan's longest documents, truncated as the plan says."""
    texts = {r.offset: r.text or "" for r in read_at(scan.corpus, [d.offset for d in
                                                                    scan.longest],
                                                      scan.id_field, scan.text_field)}
    return enc.tokenize([texts[d.offset] for d in scan.longest])


def size(preset: Preset, catalog: Catalog, scan: CorpusScan, enc: Encoder, *,
         steps: int = 3, backend: Backend | None = None, command: str = "") -> Sizing:
    """Find the largest token budget for the preset's card, and time the preset's."""
    e = preset.embedding
    if e is None:
        raise InputError("not an embedding preset", field="campaign.kind")
    card = catalog.get(preset.campaign.card)
    budget_gib = memory_budget(card, preset.overheads)
    backend = backend or make_backend("cuda" if enc.device.startswith("cuda") else "cpu", None)
    rows = longest_rows(enc, scan)
    width = max(len(r) for r in rows)
    build = _builder(enc, rows, width)
    dtype = enc.dtype
    real: Workload | None = None
    if backend.kind == "cuda":
        real = build(backend.device)
        backend.cap(card.memory_gib)
        work = real

        def peak(m: int) -> float:
            data = work.make_batch(m)
            backend.reset_peak()
            forward_only(work, data, "fp32", backend.kind)
            got = backend.peak()
            assert got is not None
            return got[1]
    else:
        def peak(m: int) -> float:
            return fake_estimate(build, m, "fp32").peak / GIB
    start = max(1, e.grouped_budget // width)
    found = largest_micro_batch(peak, budget_gib, start=start,
                                limit=max(start, SEARCH_LIMIT_TOKENS // width),
                                oom_errors=backend.oom_errors, recover=backend.recover)
    if found.largest == 0:
        raise InputError(f"not even one of the longest texts ({width} tokens) fits "
                         f"{preset.campaign.card} ({budget_gib:.1f} GiB usable)",
                         field="embedding.truncation_tokens")
    run_rows = min(start, found.largest)
    work = real or build(backend.device)
    data = work.make_batch(run_rows)
    forward_only(work, data, "fp32", backend.kind)  # warm-up
    backend.reset_peak()
    times = [backend.time(lambda: forward_only(work, data, "fp32", backend.kind))
             for _ in range(steps)]
    measured_peak = backend.peak()
    median = statistics.median(times)
    useful = sum(len(rows[i % len(rows)]) for i in range(run_rows))
    flops, params, _ = count_flops(build, run_rows, training=False)
    if measured_peak is not None:
        memory = Memory(method="cuda", peak_gib=max(measured_peak[1], 1e-6),
                        allocated_gib=measured_peak[0], reserved_gib=measured_peak[1],
                        num_alloc_retries=measured_peak[2], per_sample_gib=found.per_sample())
    else:
        est = fake_estimate(build, run_rows, "fp32")
        memory = Memory(method="fake-tensor", peak_gib=max(est.gib("peak"), 1e-6),
                        weights_gib=est.gib("weights"), activations_gib=est.gib("activations"),
                        per_sample_gib=found.per_sample())
    choice = BatchChoice(card=preset.campaign.card, budget_gib=round(budget_gib, 3),
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
               f"padded tokens ({useful:,} useful)"])
    timed = preset.model_copy(update={"embedding": e.model_copy(
        update={"token_budget": run_rows * width})})
    dev = backend.describe(catalog)
    record = Measurements(
        preset=preset.campaign.name, kind="embedding",
        date=datetime.now(UTC).replace(microsecond=0).isoformat(), torch=torch.__version__,
        cuda=torch.version.cuda or "", dtype=dtype, target_card=preset.campaign.card,
        device=dev, command=command, configs=[cm],
        workload=WorkloadRecord(
            source="factory", micro_batch=run_rows, accumulation=1, seq_len=width,
            spec={"model": e.model, "model_sha256": enc.model_sha256,
                  "inputs": f"the {len(rows)} longest texts of {scan.corpus}"},
            fingerprint=workload_fingerprint(timed)))
    return Sizing(width=width, rows_fit=found.largest, budget_tokens=found.largest * width,
                  run_budget=run_rows * width, padded_per_s=run_rows * width / median,
                  useful_per_s=useful / median, peak_gib=memory.peak_gib, search=found,
                  measurements=record)

"""The configurations a preset asks to measure, each with the builder of its workload."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from planner.errors import InputError
from planner.measure.hf_config import LoadedConfig, load_config, resolve_hf
from planner.measure.hf_model import hf_builder
from planner.measure.workloads import Builder, factory_builder, reference_builder
from planner.spec.measure import MeasureSpec, resolve_reference
from planner.spec.preset import Preset


@dataclass
class Job:
    """One configuration to measure."""

    name: str
    factors: dict[str, Any]
    build: Builder
    training: bool
    micro_batch: int
    accumulation: int
    seq_len: int
    key: str = ""
    ignored: list[str] = field(default_factory=list)
    factory: str = ""
    """The preset field naming the user's factory (its failures are the user's input)."""


def jobs(preset: Preset, spec: MeasureSpec, source: str | None) -> list[Job]:
    """The baseline and every variant (training), or one batch of the longest texts
    (embedding). Identical reference workloads share a key and are measured once."""
    kind = preset.campaign.kind
    e, t = preset.embedding, preset.training
    where = f"{kind}.measure"
    if e is not None:
        if spec.reference == "transformer":
            raise InputError("an embedding campaign measures an encoder: reference = "
                             "\"encoder\", or \"hf\" with an encoder's config", file=source,
                             field=f"{where}.reference")
        seq = min(e.lengths.max, e.truncation_tokens)
        batch = max(1, e.grouped_budget // seq) if e.batching == "length-grouped" else e.batch_size
        if spec.reference == "hf":
            return [_hf_job(spec, load_config(spec, source, where), "embedding", {}, "", seq,
                            batch, 1, source, where, training=False)]
        if spec.factory:
            build = factory_builder(spec.factory, {}, dtype=spec.dtype, seq_len=seq,
                                    options=spec.options, source=source,
                                    field=f"{where}.factory")
        else:
            settings, _ = resolve_reference(spec.model_copy(update={"seq_len": seq}), {})
            build = reference_builder(settings, encoder=True)
        return [Job("embedding", {}, build, False, batch, 1, seq,
                    factory=f"{where}.factory" if spec.factory else "")]
    assert t is not None
    if spec.reference == "encoder":
        raise InputError("a training campaign measures a training step: reference = "
                         "\"transformer\"", file=source, field=f"{where}.reference")
    entries = [("baseline", dict(t.baseline.factors), f"{kind}.baseline.factors")]
    entries += [(v.name, {**t.baseline.factors, **v.changes}, f"{kind}.variants[{i}].changes")
                for i, v in enumerate(t.variants)]
    jobs = []
    loaded = load_config(spec, source, where) if spec.reference == "hf" else None
    for name, factors, fld in entries:
        if loaded is not None:
            jobs.append(_hf_job(spec, loaded, name, factors, fld, spec.seq_len, t.micro_batch,
                                t.accumulation, source, where, training=True))
            continue
        if spec.factory:
            build = factory_builder(spec.factory, factors, dtype=spec.dtype,
                                    seq_len=spec.seq_len, options=spec.options, source=source,
                                    field=f"{where}.factory")
            jobs.append(Job(name, factors, build, True, t.micro_batch, t.accumulation,
                            spec.seq_len, factory=f"{where}.factory"))
            continue
        settings, ignored = resolve_reference(spec, factors, source=source, field=fld)
        jobs.append(Job(name, factors, reference_builder(settings, encoder=False), True,
                        t.micro_batch, t.accumulation, settings["seq_len"],
                        key=json.dumps(settings, sort_keys=True), ignored=ignored))
    return jobs


def _hf_job(spec: MeasureSpec, loaded: LoadedConfig, name: str, factors: dict[str, Any],
            fld: str, seq: int, micro_batch: int, accumulation: int, source: str | None,
            where: str, *, training: bool) -> Job:
    """A configuration of `reference = "hf"`: its config checked now, so a bad field is
    reported before anything runs."""
    settings, ignored = resolve_hf(spec, loaded, factors, source=source, field=fld,
                                   seq_len=seq, training=training)
    return Job(name, factors, hf_builder(settings, encoder=not training), training,
               micro_batch, accumulation, settings.seq_len, key=settings.key(),
               ignored=ignored, factory=f"{where}.config")

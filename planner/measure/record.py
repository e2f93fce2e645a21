"""The measurements record of a `measure` run: the workload, the device, the configurations."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import torch

from planner.figures.measured import workload_fingerprint
from planner.figures.measurements import ConfigMeasurement, Measurements
from planner.figures.measurements import Workload as WorkloadRecord
from planner.spec.hf_file import config_digest
from planner.spec.measure import MeasureSpec
from planner.spec.preset import Preset


def record(preset: Preset, spec: MeasureSpec, dev: Any, configs: list[ConfigMeasurement],
           partial: bool, command: str, source: str | None = None) -> Measurements:
    """The measurements file's content: what ran, where, and every configuration. A
    transformers config file's digest is kept, for a plan to notice it has changed."""
    t, e = preset.training, preset.embedding
    seq = (min(e.lengths.max, e.truncation_tokens) if e is not None
           else spec.seq_len)
    dump = spec.model_dump(mode="json", exclude_none=True)
    if spec.reference == "hf" and isinstance(spec.config, str):
        dump["config_sha256"] = config_digest(spec.config, source,
                                              f"{preset.campaign.kind}.measure.config")
    workload = WorkloadRecord(
        source="factory" if spec.factory else "reference", spec=dump,
        micro_batch=t.micro_batch if t else (configs[0].micro_batch if configs else 1),
        accumulation=t.accumulation if t else 1, cards_per_run=t.cards_per_run if t else 1,
        seq_len=seq, fingerprint=workload_fingerprint(preset))
    return Measurements(
        preset=preset.campaign.name, kind=preset.campaign.kind,
        date=datetime.now(UTC).replace(microsecond=0).isoformat(), torch=torch.__version__,
        cuda=torch.version.cuda or "", dtype=spec.dtype, target_card=preset.campaign.card,
        device=dev, workload=workload, partial=partial, command=command, configs=configs)

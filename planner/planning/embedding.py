"""Planning an embedding campaign: padded tokens ÷ throughput, split across cards.

Each version of the corpus is cut into shards (the export unit, written as one file) and
the shards into one part per card: part k takes shards k, k + cards, k + 2 × cards, …, so
every card gets a share of long and short texts. One run per card per version embeds its
part. With a scanned corpus (`--corpus`) the counts are exact and the shard list is real;
without one they are estimated from the preset's length summary.
"""

from __future__ import annotations

import hashlib
import json
import math
from typing import TYPE_CHECKING

from planner.corpus import lengths
from planner.corpus.outputs import CorpusPlan, PartFigures
from planner.errors import InputError
from planner.packing.embedding_capacity import embedding_capacity
from planner.packing.schedule import schedule
from planner.planfile.embedding import BatchingFigures, EmbeddingPlan
from planner.planfile.plan import Assumptions, NotFitting, Plan, PlanCampaign, Run
from planner.planning.summary import summary_figures
from planner.spec.catalog import Card
from planner.spec.preset import Embedding, Preset
from planner.spec.templates import TemplateError, fill

if TYPE_CHECKING:
    from planner.corpus.layout import Layout

EXPORT_LAYOUT = ("{out_dir}/shard-NNNNN.npz per shard (arrays `ids` and `vectors`, float32, "
                 "in shard-list order) and {out_dir}/manifest.toml (one entry per finished "
                 "shard: counts, SHA-256, settings fingerprint)")
# Other formats and vector types (the default layout above stays word for word).
SHARD_LAYOUT = {
    "npz": "arrays `ids`, `vectors` ({dtype}){ranges}",
    "parquet": "one row per document: `id`, `vector` (fixed-size list of {dtype}), "
               "`tokens`{ranges}",
    "safetensors": "tensors `vectors` ({dtype}), `tokens`, `id_offsets` and `id_bytes` "
                   "(UTF-8 ids){ranges}",
}


def export_layout(e: Embedding, out_dir: str) -> str:
    """Where a version's files go and what they hold."""
    if e.format == "npz" and e.vector_dtype == "float32":
        return EXPORT_LAYOUT.replace("{out_dir}", out_dir)
    dtype = {"binary": "int8, 8 dimensions per byte as packbits"}.get(e.vector_dtype,
                                                                      e.vector_dtype)
    ranges = (", and the int8 calibration `ranges` [2, dim]" if e.vector_dtype == "int8"
              else "")
    what = SHARD_LAYOUT[e.format].format(dtype=dtype, ranges=ranges)
    return (f"{out_dir}/shard-NNNNN.{e.format} per shard ({what}, in shard-list order) and "
            f"{out_dir}/manifest.toml (one entry per finished shard: counts, SHA-256, "
            "settings fingerprint)")


def settings_fingerprint(e: Embedding) -> str:
    """SHA-256 of what makes vectors comparable: model, tokenizer, truncation, pooling,
    normalization, prompt, dimensions, the backend, and the export's vector type and
    format. Two versions with different
    fingerprints must never mix."""
    fixed = {"model": e.model, "tokenizer": e.tokenizer, "truncation_tokens": e.truncation_tokens,
             "pooling": e.pooling, "normalization": e.normalization, "prompt": e.prompt,
             "dimensions": e.dimensions, "backend": e.backend}
    # Named only when set, so the fingerprint of a float32 npz campaign stays as it was.
    if e.vector_dtype != "float32":
        fixed["vector_dtype"] = e.vector_dtype
    if e.format != "npz":
        fixed["format"] = e.format
    return hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()


def _parts(layout: Layout, n: int) -> list[PartFigures]:
    out = []
    for k in range(n):
        mine = layout.shard_list.shards[k::n]
        out.append(PartFigures(part=k, shards=len(mine),
                               documents=sum(s.documents for s in mine),
                               useful_tokens=sum(s.useful_tokens for s in mine),
                               padded_tokens=sum(s.padded_tokens for s in mine)))
    return out


def _corpus_plan(layout: Layout, parts: list[PartFigures], e: Embedding) -> CorpusPlan:
    sl = layout.shard_list
    return CorpusPlan(
        path=sl.corpus, format=sl.corpus_format, id_field=sl.id_field,
        text_field=sl.text_field, bytes=sl.corpus_bytes, documents=sl.documents,
        useful_tokens=sl.useful_tokens, padded_tokens=sl.padded_tokens,
        tokenizer=layout.scan.tokenizer, shard_list="shards.toml",
        shard_list_sha256=layout.list_sha256, shard_documents=e.shard_documents,
        shards=len(sl.shards), parts=parts)


def _estimates(e: Embedding, layout: Layout | None) -> dict[str, lengths.Batching]:
    if layout is None:
        return lengths.estimate(e.lengths, e.documents, e.truncation_tokens, e.batch_size,
                                e.grouped_budget)
    return {s.strategy: lengths.Batching(s.strategy, s.batches, s.useful_tokens,
                                         s.padded_tokens) for s in layout.scan.strategies}


def plan_embedding(preset: Preset, card: Card, campaign: PlanCampaign, warnings: list[str],
                   source: str | None, layout: Layout | None = None, *,
                   budget_note: str = "") -> Plan:
    """The embedding half of `plan_campaign`: one run per card per version. `budget_note`
    says where the batch sizes come from (`planner.corpus.budget`)."""
    e = preset.embedding
    assert e is not None
    from planner.corpus.plan_check import check_model

    verdict = check_model(e, preset.order.packages, source=source)
    warnings = [*warnings, *verdict.warnings]
    o = preset.overheads
    n = campaign.cards
    usable = campaign.usable_hours
    assert e.throughput_tokens_per_s is not None
    tput = e.throughput_tokens_per_s.value
    est = _estimates(e, layout)
    documents = layout.scan.documents if layout else e.documents
    lengths_source = layout.scan.lengths.source if layout else e.lengths.source
    strategies = [
        BatchingFigures(strategy=b.strategy, batches=b.batches, useful_tokens=b.useful_tokens,
                        padded_tokens=b.padded_tokens,
                        padding_fraction=round(b.padding_fraction, 4),
                        hours_per_version=round(b.padded_tokens / tput / 3600 / n, 4))
        for b in est.values()
    ]
    chosen = est[e.batching]
    parts = _parts(layout, n) if layout else []
    part_padded = [p.padded_tokens for p in parts] if layout else [chosen.padded_tokens / n] * n
    startup_h = o.startup_minutes / 60
    part_hours = [startup_h + padded / tput / 3600 for padded in part_padded]
    durations, ids, meta = [], [], []
    for version in range(1, e.versions + 1):
        for part in range(n):
            ids.append(f"{campaign.id}-v{version}-part{part}")
            durations.append(part_hours[part])
            meta.append((version, part))
    placed = schedule(durations, [1] * len(durations), n, usable)
    runs: list[Run] = []
    missing: list[NotFitting] = []
    out_root = f"{e.export_root}/{campaign.id}"
    for rid, (version, part), place in zip(ids, meta, placed, strict=True):
        if place is None:
            missing.append(NotFitting(
                id=rid, reason=f"needs {part_hours[part]:.1f} h; no card free long enough "
                               f"before hour {campaign.usable_until_h:g}"))
            continue
        out_dir = f"{out_root}/v{version}"
        try:
            argv, command = fill(e.command, dict(
                plan="plan.toml", run_id=rid, campaign_id=campaign.id, version=version,
                part=part, parts=n, shard=part, shards=n, out_dir=out_dir,
                resume=f"{out_dir}/manifest.toml", model=e.model, tokenizer=e.tokenizer,
                truncation=e.truncation_tokens, pooling=e.pooling,
                normalization=e.normalization, batching=e.batching, batch_size=e.batch_size,
                token_budget=e.grouped_budget), e.shell)
        except TemplateError as exc:
            raise InputError(str(exc), file=source, field="embedding.command") from None
        runs.append(Run(
            id=rid, kind="embed", variant=f"v{version}", factor="", value="",
            version=version, shard=part, card=list(place.cards),
            start_h=round(place.start + campaign.usable_from_h, 4),
            end_h=round(place.end + campaign.usable_from_h, 4), steps=0,
            micro_batch=e.batch_size if e.batching == "original" else 0, accumulation=1,
            effective_batch=e.batch_size if e.batching == "original" else 0,
            checkpoint_dir=out_dir, export_name=out_dir,
            command=command, argv=argv, shell=e.shell, resume=f"{out_dir}/manifest.toml",
        ))
    # One pass over the runs (not one per version): planning stays linear in versions.
    incomplete = {ver for (ver, _), p in zip(meta, placed, strict=True) if p is None}
    versions_fit = e.versions - len(incomplete)
    per_version = max(part_hours)
    if per_version <= usable:
        docs_first = documents
    else:
        share = max(0.0, usable - startup_h) / (per_version - startup_h)
        docs_first = math.floor(documents * share)
        warnings.append(
            f"one pass over the corpus needs {per_version:.1f} h per card but "
            f"{usable:.1f} h are usable: about {docs_first:,} of {documents:,} documents fit")
    warnings += _warnings(e, layout, est, lengths_source, versions_fit)
    busy = sum((r.end_h - r.start_h) * len(r.card) for r in runs)
    summary = summary_figures(preset, usable, campaign.price_per_card_hour, busy, runs, len(ids))
    capacity = embedding_capacity(e, documents, part_padded, chosen.batches, startup_h, usable,
                                  n, scanned=layout is not None)
    summary = summary.model_copy(update={"capacity": capacity})
    shards = (len(layout.shard_list.shards) if layout
              else max(1, math.ceil(documents / e.shard_documents)))
    emb = EmbeddingPlan(
        model=e.model, tokenizer=e.tokenizer, truncation_tokens=e.truncation_tokens,
        pooling=e.pooling, normalization=e.normalization, prompt=e.prompt,
        dimensions=verdict.dim, backend=verdict.backend, model_stack=verdict.stack,
        differs_from_model=dict(e.differs_from_model),
        settings_fingerprint=settings_fingerprint(e), batching=e.batching,
        documents=documents, lengths_source=lengths_source, strategies=strategies,
        versions_wanted=e.versions, versions_fit=versions_fit,
        documents_fit_first_version=docs_first,
        model_sha256=layout.model_sha256 if layout else "",
        tokenizer_sha256=layout.scan.tokenizer_sha256 if layout else "",
        shards=shards, shard_documents=e.shard_documents, batch_size=e.batch_size,
        token_budget=e.grouped_budget, budget_note=budget_note,
        export_layout=export_layout(e, f"{out_root}/v<version>"),
        format=e.format, vector_dtype=e.vector_dtype, prompt_kind=e.prompt_kind,
        corpus=_corpus_plan(layout, parts, e) if layout else None,
    )
    assumptions = Assumptions(overheads=o, card_memory_gib=card.memory_gib,
                              memory_budget_gib=card.memory_gib - o.memory_margin_gib,
                              throughput_tokens_per_s=e.throughput_tokens_per_s)
    return Plan(campaign=campaign, assumptions=assumptions, runs=runs, not_fitting=missing,
                warnings=warnings, summary=summary, embedding=emb)


def _warnings(e: Embedding, layout: Layout | None, est: dict[str, lengths.Batching],
              lengths_source: str, versions_fit: int) -> list[str]:
    out: list[str] = []
    tput = e.throughput_tokens_per_s
    assert tput is not None  # the figures were derived for the card before planning
    if tput.source == "entered":
        out.append("throughput is an `entered` figure: replace it with a measured one "
                   "before ordering")
    elif tput.source == "analytic" and tput.low is not None and tput.high is not None:
        from planner.figures.encoder import FULL_CONDITIONS, HALF_CONDITIONS

        published = next((f" on published encoder speeds ({c})" for c in
                          (HALF_CONDITIONS, FULL_CONDITIONS) if c in tput.note), "")
        out.append(f"throughput is `analytic` ({tput.low:,.0f}–{tput.high:,.0f} tokens/s, "
                   f"planned on {tput.value:,.0f}): computed from the encoder's FLOPs per "
                   f"token{published}, nothing run; measure it before ordering")
    if lengths_source == "approximate" and layout is not None:
        out.append(f"token lengths are approximate ({layout.scan.tokenizer}): install "
                   "`tokenizers` and the model's files for exact padding figures")
    elif lengths_source != "scanned":
        out.append(f"token lengths are {lengths_source}: scan the corpus with the "
                   "campaign's tokenizer for exact padding figures")
    if layout is not None:
        out += layout.warnings
    if versions_fit < e.versions:
        out.append(f"{versions_fit} of {e.versions} representation versions fit")
    chosen = est[e.batching]
    other = "original" if e.batching == "length-grouped" else "length-grouped"
    if est[other].padded_tokens < chosen.padded_tokens:
        out.append(f"{other} batching would compute fewer padded tokens than "
                   f"{e.batching} ({est[other].padding_fraction:.0%} vs "
                   f"{chosen.padding_fraction:.0%} padding)")
    if "{part}" not in e.command and "--shard {shard}" in e.command:
        out.append("embedding.command passes `--shard {shard}`, which selects one export "
                   "shard: use `--part {part}/{parts}` so each run embeds its whole part")
    return out

"""Planning an embedding campaign: padded tokens ÷ throughput, split across cards."""

from __future__ import annotations

import hashlib
import json
import math

from planner import lengths
from planner.catalog import Card
from planner.errors import InputError
from planner.plan import (
    Assumptions,
    BatchingFigures,
    EmbeddingPlan,
    NotFitting,
    Plan,
    PlanCampaign,
    Run,
)
from planner.preset import Embedding, Preset
from planner.schedule import schedule
from planner.summary import summary_figures


def settings_fingerprint(e: Embedding) -> str:
    """SHA-256 of what makes vectors comparable: model, tokenizer, truncation, pooling and
    normalization. Two versions with different fingerprints must never mix."""
    fixed = {"model": e.model, "tokenizer": e.tokenizer, "truncation_tokens": e.truncation_tokens,
             "pooling": e.pooling, "normalization": e.normalization}
    return hashlib.sha256(json.dumps(fixed, sort_keys=True).encode()).hexdigest()


def plan_embedding(preset: Preset, card: Card, campaign: PlanCampaign, warnings: list[str],
                   source: str | None) -> Plan:
    """The embedding half of `plan_campaign`: one run per card per version."""
    e = preset.embedding
    assert e is not None
    o = preset.overheads
    n = campaign.cards
    usable = campaign.usable_hours
    tput = e.throughput_tokens_per_s.value
    est = lengths.estimate(e.lengths, e.documents, e.truncation_tokens, e.batch_size,
                           e.token_budget)
    strategies = [
        BatchingFigures(strategy=b.strategy, batches=b.batches, useful_tokens=b.useful_tokens,
                        padded_tokens=b.padded_tokens,
                        padding_fraction=round(b.padding_fraction, 4),
                        hours_per_version=round(b.padded_tokens / tput / 3600 / n, 4))
        for b in est.values()
    ]
    chosen = est[e.batching]
    shard_hours = o.startup_minutes / 60 + chosen.padded_tokens / n / tput / 3600
    durations, ids, meta = [], [], []
    for version in range(1, e.versions + 1):
        for shard in range(n):
            ids.append(f"{campaign.id}-v{version}-shard{shard}")
            durations.append(shard_hours)
            meta.append((version, shard))
    placed = schedule(durations, [1] * len(durations), n, usable)
    runs: list[Run] = []
    missing: list[NotFitting] = []
    out_root = f"{e.export_root}/{campaign.id}"
    for rid, (version, shard), place in zip(ids, meta, placed, strict=True):
        if place is None:
            missing.append(NotFitting(
                id=rid, reason=f"needs {shard_hours:.1f} h; no card free long enough before "
                               f"hour {campaign.usable_until_h:g}"))
            continue
        out_dir = f"{out_root}/v{version}"
        try:
            command = e.command.format(
                plan="plan.toml", run_id=rid, campaign_id=campaign.id, version=version,
                shard=shard, shards=n, out_dir=out_dir, resume=f"{out_dir}/manifest.toml",
                model=e.model, tokenizer=e.tokenizer, truncation=e.truncation_tokens,
                pooling=e.pooling, normalization=e.normalization, batching=e.batching,
                batch_size=e.batch_size, token_budget=e.token_budget)
        except (KeyError, IndexError, AttributeError) as exc:
            raise InputError(f"placeholder {exc} has no value", file=source,
                             field="embedding.command") from None
        runs.append(Run(
            id=rid, kind="embed", variant=f"v{version}", factor="", value="",
            version=version, shard=shard, card=list(place.cards),
            start_h=round(place.start + campaign.usable_from_h, 4),
            end_h=round(place.end + campaign.usable_from_h, 4), steps=0,
            micro_batch=e.batch_size if e.batching == "original" else 0, accumulation=1,
            effective_batch=e.batch_size if e.batching == "original" else 0,
            checkpoint_dir=out_dir, export_name=f"{out_dir}/shard-{shard:05d}",
            command=command, resume=f"{out_dir}/manifest.toml",
        ))
    per_version = shard_hours
    versions_fit = sum(
        1 for v in range(1, e.versions + 1)
        if all(p is not None for (ver, _), p in zip(meta, placed, strict=True) if ver == v)
    )
    if per_version <= usable:
        docs_first = e.documents
    else:
        share = max(0.0, usable - o.startup_minutes / 60) / (per_version - o.startup_minutes / 60)
        docs_first = math.floor(e.documents * share)
        warnings.append(
            f"one pass over the corpus needs {per_version:.1f} h per card but "
            f"{usable:.1f} h are usable: about {docs_first:,} of {e.documents:,} documents fit")
    if e.throughput_tokens_per_s.source == "entered":
        warnings.append("throughput is an `entered` figure: replace it with a measured one "
                        "before ordering")
    if e.lengths.source != "scanned":
        warnings.append(f"token lengths are {e.lengths.source}: scan the corpus with the "
                        "campaign's tokenizer for exact padding figures")
    if versions_fit < e.versions:
        warnings.append(f"{versions_fit} of {e.versions} representation versions fit")
    other = "original" if e.batching == "length-grouped" else "length-grouped"
    if est[other].padded_tokens < chosen.padded_tokens:
        warnings.append(f"{other} batching would compute fewer padded tokens than "
                        f"{e.batching} ({est[other].padding_fraction:.0%} vs "
                        f"{chosen.padding_fraction:.0%} padding)")
    busy = sum((r.end_h - r.start_h) * len(r.card) for r in runs)
    summary = summary_figures(preset, usable, campaign.price_per_card_hour, busy, runs, len(ids))
    emb = EmbeddingPlan(
        model=e.model, tokenizer=e.tokenizer, truncation_tokens=e.truncation_tokens,
        pooling=e.pooling, normalization=e.normalization,
        settings_fingerprint=settings_fingerprint(e), batching=e.batching,
        documents=e.documents, lengths_source=e.lengths.source, strategies=strategies,
        versions_wanted=e.versions, versions_fit=versions_fit,
        documents_fit_first_version=docs_first,
    )
    assumptions = Assumptions(overheads=o, card_memory_gib=card.memory_gib,
                              memory_budget_gib=card.memory_gib - o.memory_margin_gib,
                              throughput_tokens_per_s=e.throughput_tokens_per_s)
    return Plan(campaign=campaign, assumptions=assumptions, runs=runs, not_fitting=missing,
                warnings=warnings, summary=summary, embedding=emb)

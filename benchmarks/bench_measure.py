"""Measurement figures: prints them, asserts nothing.

    python benchmarks/bench_measure.py [--threads 1] [--steps 10] [--trials 6]

1. Prediction error. For several reference transformers (the shipped ablation variants at a
   CPU-sized scale): `measure_preset` times N steps; the plan predicts an M = 10·N step run as
   M × the median step time; the run is then done (a fresh model, a short warm-up standing
   for the run's start-up, then M timed steps back to back) and the error printed. Target:
   median error under 5 % on CPU. The torch thread count is set explicitly: one by default,
   because on a machine shared with other work, OpenMP threads that outnumber the free cores
   spin-wait on each other and make step times swing by several times.
2. The time to count the FLOPs of one training step of a 1-billion-parameter transformer on
   the meta device (nothing allocated), against the analytic 6·params·tokens, and the time
   of its fake-tensor memory estimate.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch

from planner.figures.analytic import GIB, reference_flops, reference_params
from planner.measure import measure_preset
from planner.measure.flops import count_flops
from planner.measure.memory import fake_estimate, train_step
from planner.measure.workloads import reference_builder
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset
from planner.spec.measure import MeasureSpec, resolve_reference

REFERENCE = {"reference": "transformer", "d_model": 128, "layers": 2, "heads": 4,
             "seq_len": 64, "vocab": 2048, "dtype": "fp32", "optimizer": "adamw"}


def prediction(threads: int, steps: int, trials: int) -> list[float]:
    """Relative errors |predicted − actual| / actual of M = 10·N step runs.

    Each configuration is measured and then run right away, so both see the same machine.
    """
    preset, _ = load_preset("ablation-7d")
    training = preset.ablation
    assert training is not None
    spec = MeasureSpec(**REFERENCE, warmup_steps=2, steps=steps)
    configs = [("baseline", dict(training.baseline.factors))] + [
        (v.name, {**training.baseline.factors, **v.changes}) for v in training.variants]
    long_run = 10 * steps
    errors = []
    print(f"  {'config':<13} {'N':>3} {'median s':>9} {'M':>4} {'predicted s':>12} "
          f"{'actual s':>9} {'error':>7}  load")
    for name, factors in configs[:trials]:
        # One configuration alone, at 8 samples per optimizer step (4 × 2): a step near a
        # tenth of a second on a CPU.
        alone = training.model_copy(update={
            "measure": spec, "micro_batch": 4, "accumulation": 2, "effective_batch": 8,
            "variants": [], "baseline": training.baseline.model_copy(
                update={"factors": factors})})
        m = measure_preset(preset.model_copy(update={"ablation": alone}), load_catalog(),
                           device="cpu", threads=threads)
        cm = m.configs[0]
        assert cm.step_time is not None
        predicted = long_run * cm.step_time.median_s
        settings, _ = resolve_reference(spec, factors)
        w = reference_builder(settings, encoder=False)(torch.device("cpu"))
        batch = w.make_batch(cm.micro_batch)
        for _ in range(2):  # the run's start-up: the planner counts it apart
            train_step(w, batch, cm.accumulation, spec.dtype, "cpu")
        start = time.perf_counter()
        for _ in range(long_run):
            train_step(w, batch, cm.accumulation, spec.dtype, "cpu")
        actual = time.perf_counter() - start
        err = abs(predicted - actual) / actual
        errors.append(err)
        print(f"  {name:<13} {cm.step_time.steps:>3} {cm.step_time.median_s:>9.4f} "
              f"{long_run:>4} {predicted:>12.2f} {actual:>9.2f} {err:>7.1%}  "
              f"{os.getloadavg()[0]:.1f}")
    return errors


def billion(threads: int) -> None:
    """FLOP counting and the fake-tensor estimate of a ~1B-parameter model."""
    spec = MeasureSpec(reference="transformer", d_model=2048, layers=18, heads=16,
                       seq_len=2048, vocab=50304, dtype="bf16")
    settings, _ = resolve_reference(spec, {})
    build = reference_builder(settings, encoder=False)
    p = reference_params(settings)
    start = time.perf_counter()
    flops, params, _ = count_flops(build, 1)
    counted = time.perf_counter() - start
    six = 6 * p.matmul * settings["seq_len"]
    print(f"  model: {params / 1e9:.2f} B parameters ({p.matmul / 1e9:.2f} B in matrix "
          f"products), sequence {settings['seq_len']}, micro-batch 1")
    print(f"  FLOPs counted on meta: {flops:.4g} in {counted:.2f} s "
          f"(6·params·tokens = {six:.4g}; with attention {reference_flops(settings, 1):.4g})")
    start = time.perf_counter()
    est = fake_estimate(build, 1, "bf16")
    print(f"  fake-tensor memory estimate: peak {est.peak / GIB:.1f} GiB (weights "
          f"{est.gib('weights'):.1f}, gradients {est.gib('gradients'):.1f}, optimizer "
          f"{est.gib('optimizer'):.1f}, activations {est.gib('activations'):.1f}) in "
          f"{time.perf_counter() - start:.2f} s, nothing allocated")


def main() -> None:
    warnings.simplefilter("ignore")
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, default=1, help="torch CPU threads (default 1)")
    p.add_argument("--steps", type=int, default=10, help="N, steps measured (default 10)")
    p.add_argument("--trials", type=int, default=6, help="configurations run (default 6)")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} CPU threads of {os.cpu_count()}, load "
          f"average {os.getloadavg()[0]:.1f} (other processes skew CPU timings), reference "
          f"{REFERENCE['d_model']}×{REFERENCE['layers']} layers, seq {REFERENCE['seq_len']}, "
          f"{REFERENCE['dtype']}")
    print(f"\n1. Predicting an M = 10·N step run from N = {args.steps} measured steps")
    errors = prediction(args.threads, args.steps, args.trials)
    print(f"  median error {statistics.median(errors):.1%} (target < 5%), max "
          f"{max(errors):.1%}")
    print("\n2. A 1-billion-parameter model on the meta device")
    billion(args.threads)


if __name__ == "__main__":
    main()

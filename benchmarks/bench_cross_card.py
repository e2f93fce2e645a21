"""Cross-card speed-ups predicted against the published ones: prints them, asserts nothing.

    python benchmarks/bench_cross_card.py

For every card of the published table (`presets/throughput.toml`: Lambda's PyTorch fp16
training throughput, one GPU) and every model in it, the speed-up over the reference card
(RTX A6000) as published, and as predicted by

- the scaling rule: an entered or measured A6000 step time moved to the card
  (`planner.figures.scaling.scale_step_time`);
- the analytic tier: the same FLOPs timed on the A6000 and on the card
  (`planner.figures.scaling.analytic_step_time`);

then, per card, the published geometric mean against the prediction. Targets: every card
within 20 % of the published geometric mean, the geometric mean of the absolute errors at
most 10 %, for both. The previous rules are printed beside them for comparison: the
roofline rule with no MFU known (worse of the TFLOPS and bandwidth ratios) and 35 % MFU of
the dense peak on every card. Last, a refit of the two-parameter-per-chip model by grid
search, to show the stored figures are the least-squares ones, and a leave-one-card-out
check: each card predicted by a fit that never saw it (a fair test of the rule; the figures
above are in-sample).
"""

from __future__ import annotations

import math

from planner.figures.calibration import Calibration, load_calibration, tau
from planner.figures.scaling import analytic_step_time, scale_step_time
from planner.spec.catalog import Catalog, load_catalog

FLOPS = 1e15
"""FLOPs of the analytic step compared (large enough that no floor binds)."""


def geomean(xs: list[float]) -> float:
    """Geometric mean."""
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def published(cal: Calibration) -> dict[str, list[float]]:
    """Per card, the per-model published speed-ups over the reference card."""
    ref = cal.published[cal.reference_card].values
    return {k: [v / r for v, r in zip(row.values, ref, strict=True)]
            for k, row in cal.published.items()}


def predictions(cal: Calibration, catalog: Catalog) -> dict[str, dict[str, float]]:
    """Per rule, per card: the predicted speed-up over the reference card."""
    ref = cal.reference_card
    base = analytic_step_time(FLOPS, ref, catalog, "fp16").typical
    r = catalog.cards[ref]
    out: dict[str, dict[str, float]] = {"scaling rule": {}, "analytic tier": {},
                                        "old roofline": {}, "old 35% MFU": {}}
    for key in cal.published:
        c = catalog.cards[key]
        out["scaling rule"][key] = 1.0 / scale_step_time(1.0, None, ref, key, catalog,
                                                         "fp16").typical
        out["analytic tier"][key] = base / analytic_step_time(FLOPS, key, catalog,
                                                              "fp16").typical
        out["old roofline"][key] = 1.0 / max(r.bf16_tflops / c.bf16_tflops,
                                             r.bandwidth_gbps / c.bandwidth_gbps)
        out["old 35% MFU"][key] = c.bf16_tflops / r.bf16_tflops
    return out


def refit(cal: Calibration, catalog: Catalog, leave_out: str = ""
          ) -> tuple[float, dict[str, float], float]:
    """Least squares on log geometric means, by a coarse then a fine grid search (without
    card `leave_out`)."""
    pub = {k: geomean(v) for k, v in published(cal).items() if k != leave_out}
    ref = catalog.cards[cal.reference_card]
    chips = sorted({catalog.cards[k].chip for k in pub} - {ref.chip})

    def err(s: float, eff: dict[str, float]) -> float:
        trial = cal.model_copy(update={"compute_share": s, "efficiency": {ref.chip: 1.0, **eff}})
        return sum(math.log(tau(ref, ref, "fp16", trial) / tau(catalog.cards[k], ref, "fp16",
                                                                 trial) / g) ** 2
                   for k, g in pub.items())

    s, eff = cal.compute_share, {c: cal.efficiency.get(c, 1.0) for c in chips}
    for step in (0.02, 0.005):
        for _ in range(6):
            for name in ["s", *chips]:
                best = None
                for i in range(-10, 11):
                    if name == "s":
                        x = min(max(s + i * step, 0.01), 1.0)
                        e = err(x, eff)
                    else:
                        x = max(eff[name] + i * step * 5, 0.05)
                        e = err(s, {**eff, name: x})
                    if best is None or e < best[0]:
                        best = (e, x)
                assert best is not None
                if name == "s":
                    s = best[1]
                else:
                    eff[name] = best[1]
    return s, eff, err(s, eff)


def main() -> None:
    """Print every table."""
    cal, catalog = load_calibration(), load_catalog()
    pub = published(cal)
    pred = predictions(cal, catalog)
    src = cal.sources[0]
    print(f"Published: {src.title}\n  {src.url}\n  {src.table}; last changed {src.date}")
    print(f"  models: {', '.join(cal.models)}; left out: {'; '.join(cal.excluded)}\n")
    width = max(len(m) for m in cal.models)
    for key in pub:
        if key == cal.reference_card:
            continue
        print(f"{key} ({cal.published[key].row}) over {cal.reference_card}: predicted "
              f"×{pred['scaling rule'][key]:.3f} (scaling), ×{pred['analytic tier'][key]:.3f} "
              "(analytic)")
        for model, x in zip(cal.models, pub[key], strict=True):
            p = pred["scaling rule"][key]
            print(f"  {model:<{width}}  published ×{x:.2f}  predicted ×{p:.2f}  "
                  f"error {p / x - 1:+.0%}")
    print()
    head = f"{'card':<14}{'published':>10}" + "".join(f"{r:>22}" for r in pred)
    print(head)
    errors: dict[str, list[float]] = {r: [] for r in pred}
    for key in pub:
        g = geomean(pub[key])
        cells = ""
        for rule, values in pred.items():
            e = values[key] / g - 1
            errors[rule].append(abs(math.log(values[key] / g)))
            cells += f"{f'×{values[key]:.2f} ({e:+.0%})':>22}"
        print(f"{key:<14}{f'×{g:.3f}':>10}{cells}")
    print()
    for rule, errs in errors.items():
        worst = max(math.exp(e) - 1 for e in errs)
        mean = math.exp(sum(errs) / len(errs)) - 1
        ok = "meets" if worst <= 0.2 and mean <= 0.1 else "misses"
        print(f"{rule:<14} worst card error {worst:.1%}, geometric-mean error {mean:.1%}: "
              f"{ok} the targets (20 %, 10 %)")
    s, eff, err = refit(cal, catalog)
    print(f"\nRefit: compute_share {s:.4f}, efficiency "
          + ", ".join(f"{k} {v:.3f}" for k, v in eff.items())
          + f" (sum of squared log errors {err:.4f}); stored: compute_share "
          f"{cal.compute_share}, efficiency "
          + ", ".join(f"{k} {v}" for k, v in cal.efficiency.items()))
    print("\nLeave one card out (fit on the others, predict it):")
    ref = catalog.cards[cal.reference_card]
    out_errs = []
    for key, values in pub.items():
        if key == cal.reference_card:
            continue
        s, eff, _ = refit(cal, catalog, leave_out=key)
        trial = cal.model_copy(update={"compute_share": s,
                                       "efficiency": {**cal.efficiency, **eff}})
        p = tau(ref, ref, "fp16", trial) / tau(catalog.cards[key], ref, "fp16", trial)
        g = geomean(values)
        out_errs.append(abs(math.log(p / g)))
        print(f"  {key:<14} published ×{g:.3f}  predicted ×{p:.3f}  error {p / g - 1:+.1%}")
    print(f"  geometric-mean error {math.exp(sum(out_errs) / len(out_errs)) - 1:.1%}, worst "
          f"{max(math.exp(e) - 1 for e in out_errs):.1%}")


if __name__ == "__main__":
    main()

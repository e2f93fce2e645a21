"""Fitting the efficiency model of `planner.figures.efficiency` on its published rows.

Least squares on log tokens per second per GPU (Levenberg–Marquardt with a numerical
Jacobian, in pure Python: a few hundred rows and eight parameters), and the all-reduce
exposure fitted on groups of rows that differ only in the number of GPUs. The planner reads
the stored fit; `benchmarks/bench_cross_card.py` refits, prints and checks it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from planner.figures.efficiency import (
    ChipFit,
    Efficiency,
    Fit,
    HeldOut,
    Row,
    Work,
    chip_fit,
    log_band,
    per_token,
    seconds_on_anchor,
)
from planner.spec.catalog import Catalog

INTER_NODE_GBPS = 25.0
"""One-way GB/s per GPU between nodes: 1600 Gbps RoCE per node of 8 GPUs, as llm-foundry's
tables state (the H100 tables do not say; the same is assumed)."""


def row_work(row: Row, eff: Efficiency) -> Work:
    """One token of a published row, as the analytic tier counts it."""
    shape = eff.shapes[row.model]
    params = float(row.num_params or 0)
    # MPT learns positional embeddings (seq × d lookups, no products); the head is tied.
    params -= row.seq * shape.d_model
    gemm, attn = per_token(params, shape.layers, shape.d_model, row.seq,
                           float(shape.vocab * shape.d_model), row.checkpointing)
    return Work(gemm=gemm, attn=attn, d_model=shape.d_model,
                tokens=float(row.micro_batch * row.seq), checkpointing=row.checkpointing)


def held_work(h: HeldOut) -> Work:
    """One token of a held-out run."""
    gemm, attn = per_token(h.params, h.layers, h.d_model, h.seq, float(h.vocab * h.d_model),
                           h.checkpointing)
    return Work(gemm=gemm, attn=attn, d_model=h.d_model, tokens=float(h.micro_batch * h.seq),
                checkpointing=h.checkpointing)


def predicted_tpg(work: Work, chip: str, fit: Fit, peak: float) -> float:
    """Tokens per second per GPU the model predicts on the fitted chip's own card."""
    _, cf = chip_fit(chip, fit)
    return 1.0 / seconds_on_anchor(work, cf, fit, peak)


def _chip(row: Row, eff: Efficiency, catalog: Catalog) -> tuple[str, float]:
    card = catalog.cards[eff.cards[row.table]]
    return card.chip, card.peak_tflops("bf16")


def residuals(eff: Efficiency, fit: Fit, catalog: Catalog,
              rows: Iterable[Row] | None = None) -> list[float]:
    """log(published / predicted) tokens per second per GPU, per row."""
    out = []
    for row in rows if rows is not None else eff.rows:
        chip, peak = _chip(row, eff, catalog)
        out.append(math.log(row.tokens_per_s_per_gpu
                            / predicted_tpg(row_work(row, eff), chip, fit, peak)))
    return out


def _unpack(x: list[float], chips: list[str], base: Fit) -> Fit:
    chip_fits = {c: ChipFit(card=base.chips[c].card if c in base.chips else "",
                            level=min(math.exp(x[3 * i]), 1.0),
                            width_scale=math.exp(x[3 * i + 1]),
                            attention=math.exp(x[3 * i + 2])) for i, c in enumerate(chips)}
    return base.model_copy(update={"chips": chip_fits, "checkpointing": math.exp(x[-2]),
                                   "micro_batch_tokens": math.exp(x[-1])})


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting."""
    n = len(b)
    m = [[*row, b[i]] for i, row in enumerate(a)]
    for col in range(n):
        piv = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[piv] = m[piv], m[col]
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


START = (0.6, 500.0, 0.7, 1.0, 1000.0)
"""Where every fit starts (level, width_scale, attention, checkpointing, micro_batch_tokens):
the same neutral point whatever is stored, so a leave-one-out fit learns nothing from the
rows it leaves out."""


def fit_rows(eff: Efficiency, catalog: Catalog, rows: list[Row],
             iterations: int = 60) -> Fit:
    """The least-squares fit on `rows` (chips without rows keep the stored fit's model)."""
    chips = sorted({_chip(r, eff, catalog)[0] for r in rows})
    base = eff.fit
    level, width, attention, ckpt, tokens = START
    x: list[float] = []
    for _ in chips:
        x += [math.log(level), math.log(width), math.log(attention)]
    x += [math.log(ckpt), math.log(tokens)]

    def res(v: list[float]) -> list[float]:
        trial = _unpack(v, chips, base)
        trial = trial.model_copy(update={"chips": {**base.chips, **trial.chips}})
        return residuals(eff, trial, catalog, rows)

    lam = 1e-2
    r = res(x)
    cost = sum(e * e for e in r)
    for _ in range(iterations):
        jac = []
        for j in range(len(x)):
            step = 1e-5
            xp = x[:]
            xp[j] += step
            rp = res(xp)
            jac.append([(a - b) / step for a, b in zip(rp, r, strict=True)])
        jtj = [[sum(a * b for a, b in zip(jac[i], jac[k], strict=True)) for k in range(len(x))]
               for i in range(len(x))]
        jtr = [sum(a * b for a, b in zip(jac[i], r, strict=True)) for i in range(len(x))]
        improved = False
        for _ in range(8):
            a = [[jtj[i][k] + (lam * (jtj[i][i] + 1e-9) if i == k else 0.0)
                  for k in range(len(x))] for i in range(len(x))]
            dx = _solve(a, [-v for v in jtr])
            xn = [p + d for p, d in zip(x, dx, strict=True)]
            rn = res(xn)
            cn = sum(e * e for e in rn)
            if cn < cost:
                x, r, cost, lam, improved = xn, rn, cn, lam / 3, True
                break
            lam *= 4
        if not improved or cost < 1e-12:
            break
    fitted = _unpack(x, chips, base)
    # Residuals are in throughput; the band is of step times.
    low, high = log_band([-e for e in r])
    return base.model_copy(update={
        "chips": {**base.chips, **fitted.chips}, "checkpointing": fitted.checkpointing,
        "micro_batch_tokens": fitted.micro_batch_tokens, "band_low": low, "band_high": high,
        "residual_rms": math.sqrt(cost / len(r))})


def allreduce_s(params: float, gpus: int, nvlink_gbps: float) -> float:
    """Ring all-reduce of fp32 gradients per optimizer step: NVLink inside one node of 8,
    `INTER_NODE_GBPS` across nodes."""
    gbps = nvlink_gbps / 2 if gpus <= 8 else INTER_NODE_GBPS
    return 2.0 * (gpus - 1) / gpus * 4.0 * params / (gbps * 1e9)


def exposed_s(allreduce: float, share: float) -> float:
    """The part of an all-reduce a step waits for: `share` of it, the rest hidden behind
    the backward pass."""
    return share * allreduce


def scaling_groups(eff: Efficiency) -> list[list[Row]]:
    """Rows that differ only in their number of GPUs, smallest count first."""
    groups: dict[tuple[object, ...], list[Row]] = {}
    for r in eff.rows:
        key = (r.table, r.model, r.seq, r.micro_batch, r.accumulation, r.checkpointing,
               r.sharding)
        groups.setdefault(key, []).append(r)
    return [sorted(g, key=lambda r: r.gpus) for g in groups.values()
            if len({r.gpus for r in g}) > 1]


def scaling_errors(eff: Efficiency, catalog: Catalog, share: float
                   ) -> list[tuple[Row, Row, float, float]]:
    """(base row, row, published per-GPU ratio, predicted ratio) for every scaling group."""
    out = []
    for g in scaling_groups(eff):
        base = g[0]
        card = catalog.cards[eff.cards[base.table]]
        params = float(base.num_params or 0)
        tokens = base.micro_batch * base.accumulation * base.seq
        step0 = tokens / base.tokens_per_s_per_gpu
        e0 = exposed_s(allreduce_s(params, base.gpus, card.nvlink_gbps), share)
        compute = step0 - e0
        for r in g[1:]:
            e = exposed_s(allreduce_s(params, r.gpus, card.nvlink_gbps), share)
            out.append((base, r, r.tokens_per_s_per_gpu / base.tokens_per_s_per_gpu,
                        (compute + e0) / (compute + e)))
    return out


def fit_exposure(eff: Efficiency, catalog: Catalog) -> tuple[float, float]:
    """(share, rms log error): the all-reduce exposure that best explains the scaling groups
    (a grid over 0–1)."""
    best = (1.0, math.inf)
    for i in range(1001):
        share = i / 1000
        errs = [math.log(p / q) for _, _, p, q in scaling_errors(eff, catalog, share)]
        cost = math.sqrt(sum(e * e for e in errs) / max(len(errs), 1))
        if cost < best[1] - 1e-12:
            best = (share, cost)
    return best

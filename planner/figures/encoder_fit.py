"""The fit of the encoder launch term (`[encoder.launch]` of `presets/efficiency.toml`) and
its held-out checks. Read by the tests and `benchmarks/bench_cross_card.py`, never by a plan.

One sentence of `s` padded tokens through an encoder of width d and L layers, in batches of
B sentences, takes

    t = s · F(s) / (A · g(d)) + L · c / B

where F is the forward FLOPs per padded token (`encoder.per_token_flops`), g the width
factor of the training fit, A the device's rate at full width (a nuisance parameter: only
the published device has it) and c the launch time per layer per batch. Queries (short)
and passages (long) of encoders of two widths and depths separate c from A.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

from planner.figures.encoder import EncoderShape, Launch, per_token_flops


class LaunchFit(NamedTuple):
    """The fitted launch term, the device's level, and the log residuals."""

    per_layer_s: float
    level_flops: float
    residuals: list[float]


def sentence_time(shape: EncoderShape, tokens: float, batch: int, level: float,
                  per_layer_s: float, width_scale: float) -> float:
    """Seconds per sentence of `tokens` padded tokens (see the module docstring)."""
    g = shape.d_model / (shape.d_model + width_scale)
    return (tokens * per_token_flops(shape, tokens) / (level * g)
            + shape.layers * per_layer_s / batch)


def _points(launch: Launch, held_out: bool) -> list[tuple[EncoderShape, float, float]]:
    out: list[tuple[EncoderShape, float, float]] = []
    for r in launch.rows:
        if r.held_out == held_out:
            out += [(r.shape, launch.query_tokens, r.queries_per_s),
                    (r.shape, launch.passage_tokens, r.docs_per_s)]
    return out


def _residuals(launch: Launch, points: list[tuple[EncoderShape, float, float]],
               level: float, c: float, width_scale: float) -> list[float]:
    return [math.log(1.0 / sentence_time(shape, s, launch.batch, level, c, width_scale) / p)
            for shape, s, p in points]


def _golden(f: Callable[[float], float], lo: float, hi: float, steps: int = 60) -> float:
    """Minimum of a unimodal function on [lo, hi] by golden-section search."""
    r = (math.sqrt(5) - 1) / 2
    a, b = lo, hi
    for _ in range(steps):
        x1, x2 = b - r * (b - a), a + r * (b - a)
        if f(x1) <= f(x2):
            b = x2
        else:
            a = x1
    return (a + b) / 2


def fit_launch(launch: Launch, width_scale: float, per_layer_s: float | None = None
               ) -> LaunchFit:
    """Least squares on log sentences per second over the rows not held out: the launch
    time per layer per batch and the device's level (profiled out for each launch time);
    `per_layer_s` fixes the launch time (0: compute alone) and fits the level only."""
    points = _points(launch, held_out=False)

    def sse(level_log: float, c: float) -> float:
        return sum(e * e for e in _residuals(launch, points, 10 ** level_log, c, width_scale))

    def best_level(c: float) -> float:
        return _golden(lambda x: sse(x, c), 10.0, 15.0)

    c = (_golden(lambda c: sse(best_level(c), c), 0.0, 2e-3) if per_layer_s is None
         else per_layer_s)
    level = 10 ** best_level(c)
    return LaunchFit(c, level, _residuals(launch, points, level, c, width_scale))


def held_out_errors(launch: Launch, fit: LaunchFit, width_scale: float
                    ) -> list[tuple[str, float]]:
    """(what, relative error) of each held-out published row at the fitted level."""
    out: list[tuple[str, float]] = []
    for r in launch.rows:
        if not r.held_out:
            continue
        for what, s, p in (("queries", launch.query_tokens, r.queries_per_s),
                           ("passages", launch.passage_tokens, r.docs_per_s)):
            t = sentence_time(r.shape, s, launch.batch, fit.level_flops, fit.per_layer_s,
                              width_scale)
            out.append((f"{r.model} {what}", 1.0 / t / p - 1.0))
    return out


def sentence_ratios(launch: Launch, fit: LaunchFit, width_scale: float, tokens: float
                    ) -> list[tuple[str, float, float]]:
    """(model, published, analytic) speed of each row of the held-out sentence table
    relative to its slowest row, at `tokens` padded tokens per sentence."""
    table = launch.sentences
    if table is None:
        return []
    slowest = min(table.rows, key=lambda r: r.sentences_per_s)

    def speed(shape: EncoderShape) -> float:
        return 1.0 / sentence_time(shape, tokens, launch.batch, fit.level_flops,
                                   fit.per_layer_s, width_scale)

    return [(r.model, r.sentences_per_s / slowest.sentences_per_s,
             speed(r.shape) / speed(slowest.shape)) for r in table.rows]

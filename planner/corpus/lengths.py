"""Padding accounting for embedding batches, from a corpus's token-length summary.

Without the corpus at hand, lengths are drawn deterministically from the summary's
quantiles (piecewise-linear between min, p50, p90, p99 and max), truncated, and both
batching strategies are played on that sample; figures are scaled to the corpus size.
"""

from __future__ import annotations

import functools
import random
from collections.abc import Sequence
from dataclasses import dataclass

from planner.spec.preset import TokenLengths

SAMPLE = 20_000


@dataclass(frozen=True)
class Batching:
    """What one batching strategy costs over the whole corpus."""

    strategy: str
    batches: int
    useful_tokens: int
    padded_tokens: int

    @property
    def padding_fraction(self) -> float:
        """Share of computed tokens that are padding."""
        return 1.0 - self.useful_tokens / self.padded_tokens if self.padded_tokens else 0.0


def sample_lengths(lengths: TokenLengths, n: int, truncation: int) -> list[int]:
    """`n` token lengths spread evenly over the summary's quantiles, truncated, in a fixed
    shuffled order that stands for the corpus's original order."""
    knots = [(0.0, lengths.min), (0.5, lengths.p50), (0.9, lengths.p90), (0.99, lengths.p99),
             (1.0, lengths.max)]
    out: list[int] = []
    j = 0
    for i in range(n):
        u = (i + 0.5) / n
        while knots[j + 1][0] < u:
            j += 1
        (u0, x0), (u1, x1) = knots[j], knots[j + 1]
        x = x0 + (x1 - x0) * (u - u0) / (u1 - u0)
        out.append(max(1, min(truncation, round(x))))
    # The longest document is always in the corpus; keep it in the sample so worst-case
    # batches are counted.
    out[-1] = max(1, min(truncation, lengths.max))
    random.Random(0).shuffle(out)
    return out


def original_order(lens: Sequence[int], batch_size: int) -> tuple[int, int]:
    """(batches, padded tokens) for fixed-size batches in the given order."""
    padded = 0
    batches = 0
    for i in range(0, len(lens), batch_size):
        chunk = lens[i : i + batch_size]
        padded += max(chunk) * len(chunk)
        batches += 1
    return batches, padded


def length_grouped(lens: Sequence[int], token_budget: int,
                   max_documents: int | None = None) -> tuple[int, int]:
    """(batches, padded tokens) for batches of similar length: longest first, each batch
    filled while padded length × size stays within the budget and size within
    `max_documents`."""
    ordered = sorted(lens, reverse=True)
    padded = 0
    batches = 0
    i = 0
    n = len(ordered)
    while i < n:
        width = ordered[i]
        size = batch_rows(width, token_budget, max_documents)
        size = min(size, n - i)
        padded += width * size
        batches += 1
        i += size
    return batches, padded


def estimate(lengths: TokenLengths, documents: int, truncation: int, batch_size: int,
             token_budget: int) -> dict[str, Batching]:
    """Both strategies over the whole corpus, scaled from a deterministic sample."""
    return {b.strategy: b for b in _estimate(lengths, documents, truncation, batch_size,
                                             token_budget)}


def _estimate(lengths: TokenLengths, documents: int, truncation: int, batch_size: int,
              token_budget: int) -> tuple[Batching, ...]:
    n = min(documents, SAMPLE)
    total, strategies = _sample(lengths, n, truncation, batch_size, token_budget)
    scale = documents / n
    useful = round(total * scale)
    return tuple(Batching(name, max(1, round(batches * scale)), useful,
                          max(useful, round(padded * scale)))
                 for name, (batches, padded) in strategies)


# Sampling and batching 20,000 lengths takes tens of milliseconds and depends only on the
# corpus settings, not on the card or the window: `advise` plans hundreds of orders of one
# corpus, and the capacity search tries many corpus sizes of one sample.
@functools.lru_cache(maxsize=64)
def _sample(lengths: TokenLengths, n: int, truncation: int, batch_size: int,
            token_budget: int) -> tuple[int, tuple[tuple[str, tuple[int, int]], ...]]:
    """(useful tokens, ((strategy, (batches, padded tokens)), …)) of an n-length sample."""
    lens = sample_lengths(lengths, n, truncation)
    return sum(lens), (("original", original_order(lens, batch_size)),
                       ("length-grouped", length_grouped(lens, token_budget, batch_size)))


def batch_rows(width: int, token_budget: int, max_documents: int | None = None) -> int:
    """Documents in a length-grouped batch `width` tokens wide."""
    size = max(1, token_budget // width)
    return min(size, max_documents) if max_documents else size


def grouped_counts(counts: dict[int, int], token_budget: int,
                   max_documents: int | None = None) -> tuple[int, int]:
    """`length_grouped` on a histogram of (truncated) lengths instead of a list: the same
    batches, in time proportional to the batches and distinct lengths, not the documents."""
    batches = padded = 0
    lens = sorted(counts, reverse=True)
    i, left = 0, counts[lens[0]] if lens else 0
    while i < len(lens):
        width = lens[i]
        size = batch_rows(width, token_budget, max_documents)
        batches += 1
        taken = 0
        while taken < size and i < len(lens):
            take = min(size - taken, left)
            taken += take
            left -= take
            if left == 0:
                i += 1
                left = counts[lens[i]] if i < len(lens) else 0
        padded += width * taken
    return batches, padded


class OriginalOrder:
    """Fixed-size batches in corpus order, counted as the documents stream by."""

    def __init__(self, batch_size: int) -> None:
        self.batch_size = batch_size
        self.batches = self.padded = 0
        self._n = self._width = 0

    def add(self, length: int) -> None:
        """One document's (truncated) length, in corpus order."""
        self._width = max(self._width, length)
        self._n += 1
        if self._n == self.batch_size:
            self._close()

    def _close(self) -> None:
        if self._n:
            self.batches += 1
            self.padded += self._width * self._n
        self._n = self._width = 0

    def finish(self) -> tuple[int, int]:
        """(batches, padded tokens), the last partial batch included."""
        self._close()
        return self.batches, self.padded


def exact(counts: dict[int, int], original: tuple[int, int], truncation: int,
          token_budget: int, max_documents: int | None = None) -> dict[str, Batching]:
    """Both strategies from a scanned corpus: `counts` maps each document length (before
    truncation) to how many documents have it; `original` is what `OriginalOrder` counted."""
    cut: dict[int, int] = {}
    for length, n in counts.items():
        key = max(1, min(truncation, length))
        cut[key] = cut.get(key, 0) + n
    useful = sum(length * n for length, n in cut.items())
    batches, padded = grouped_counts(cut, token_budget, max_documents)
    return {"original": Batching("original", original[0], useful, original[1]),
            "length-grouped": Batching("length-grouped", batches, useful, padded)}

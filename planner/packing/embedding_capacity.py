"""How much an embedding window holds: versions of this corpus, and documents in one version.

Both come from the plan's own figures: each version is one run per card, as long as its
part's padded tokens ÷ throughput plus the startup; the versions are placed as the plan
places them (`planner.packing.schedule.schedule`). Documents are counted for a corpus of
the same length distribution: without a scanned corpus, the length summary's deterministic
sample is batched for each corpus size tried (as the plan does for the preset's size);
with one, the scanned parts' padded tokens scale with the documents.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from planner.corpus import lengths
from planner.packing.capacity import Capacity, room_for
from planner.packing.objective import Job
from planner.packing.schedule import schedule
from planner.spec import bounds
from planner.spec.preset import Embedding


def _versions_fit(part_hours: Sequence[float], versions: int, n_cards: int,
                  usable: float) -> bool:
    durations = list(part_hours) * versions
    return all(p is not None for p in schedule(durations, [1] * len(durations), n_cards,
                                               usable))


def most_versions(part_hours: Sequence[float], n_cards: int, usable: float) -> int:
    """Most whole versions the plan's placement fits, searched below the card-hour and
    long-run bound of `planner.packing.capacity`."""
    hi = room_for([], [Job(h, 1) for h in part_hours], n_cards, usable, bounds.VERSIONS)
    lo = 0
    if hi > 0 and _versions_fit(part_hours, hi, n_cards, usable):
        return hi
    hi -= 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _versions_fit(part_hours, mid, n_cards, usable):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _largest(fits: Callable[[int], bool], guess: int, top: int) -> int:
    """Largest n in [0, top] with fits(n), for `fits` true up to some n and false after:
    galloping out from `guess` in doubling steps (fits(0) is true), then halving: a close
    guess costs a few calls."""
    guess = max(1, min(guess, top))
    step = 1
    if fits(guess):
        lo, hi = guess, top + 1
        while lo < top:
            t = min(top, lo + step)
            if not fits(t):
                hi = t
                break
            lo, step = t, step * 2
    else:
        lo, hi = 0, guess
        while hi > 1:
            t = max(0, hi - step)
            if fits(t):
                lo = t
                break
            hi, step = t, step * 2
    # fits(lo), and hi is past the end or does not fit.
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid
    return lo


def embedding_capacity(e: Embedding, documents: int, padded: Sequence[float],
                       batches: int, startup_h: float, usable: float,
                       n_cards: int, scanned: bool) -> Capacity:
    """The capacity of an embedding plan: `padded` tokens of each card's part of one
    version of `documents` documents, in `batches` batches with the planned strategy."""
    assert e.throughput_tokens_per_s is not None  # derived for the card before planning
    tput = e.throughput_tokens_per_s.value
    part_hours = [startup_h + p / tput / 3600 for p in padded]
    versions = most_versions(part_hours, n_cards, usable)
    room = (usable - startup_h) * tput * 3600  # padded tokens one card computes
    if scanned:
        per_doc = max(padded) / documents

        def whole(d: int) -> bool:
            # The plan's own sum, in its own order: a count it would cut short is not one.
            return d == 0 or startup_h + d * per_doc / tput / 3600 <= usable

        guess = math.floor(room / per_doc) if per_doc > 0 else bounds.DOCUMENTS
        docs = _largest(whole, guess, bounds.DOCUMENTS)
        return Capacity(versions=versions, versions_asked=e.versions, documents=docs,
                        batches=round(batches * docs / documents))

    def figures(d: int) -> lengths.Batching:
        return lengths.estimate(e.lengths, d, e.truncation_tokens, e.batch_size,
                                e.grouped_budget)[e.batching]

    def fits(d: int) -> bool:
        # Each card's part as the plan computes its hours, float operation for float
        # operation (`planner.planning.embedding`), and held to the window without the
        # schedule's tolerance, as the plan's "documents fit" figure is: a capacity planned
        # as the corpus size then fits whole by every check the plan makes.
        return d == 0 or startup_h + figures(d).padded_tokens / n_cards / tput / 3600 <= usable

    guess = math.floor(documents * room / max(padded)) if max(padded) > 0 else documents
    docs = _largest(fits, guess, bounds.DOCUMENTS)
    return Capacity(versions=versions, versions_asked=e.versions, documents=docs,
                    batches=figures(docs).batches if docs else 0)

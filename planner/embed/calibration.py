"""The int8 calibration of a version: the ranges every shard is quantized with.

`quantize_embeddings` maps each dimension's [min, max] to the 256 int8 steps. Shards made
by different workers must share one mapping, or their vectors would not compare, so the
ranges are fixed once per version, before its first shard: the per-dimension minimum and
maximum of the vectors of `CALIBRATION_DOCUMENTS` documents spread evenly over the whole
shard list (the same sample whichever worker computes it), recorded in the manifest by the
first worker under its lock, and read from there by every other. Values outside the ranges
are clipped to -128 or 127, as `quantize_embeddings` clips them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from planner.corpus.lengths import batch_rows

if TYPE_CHECKING:
    from planner.embed.manifest import ExportDir
    from planner.embed.worker import Job

CALIBRATION_DOCUMENTS = 1000

Row = tuple[int, str, int, int]


def sample(job: Job, documents: int = CALIBRATION_DOCUMENTS) -> list[Row]:
    """Every k-th row of the shard list (all its shards, whatever this worker's part), at
    most `documents` of them."""
    sl = job.shard_list
    step = max(1, math.ceil(sl.documents / documents))
    out: list[Row] = []
    seen = 0
    with job.ids_path.open("rb") as fh:
        for shard in sl.shards:
            fh.seek(shard.byte)
            lines = fh.read(shard.bytes).splitlines()
            first = (-seen) % step
            for line in lines[first::step]:
                batch, rid, offset, tokens = json.loads(line)
                out.append((batch, rid, offset, tokens))
            seen += len(lines)
    return out[:documents]


def calibration_vectors(job: Job, encoder: Any,
                        read_texts: Callable[[Job, list[Row]], dict[int, str]]) -> Any:
    """float32 vectors of the calibration sample, embedded in length-grouped batches."""
    import numpy as np

    e = job.embedding
    rows = sorted(sample(job), key=lambda r: -r[3])
    texts = read_texts(job, rows)
    out = np.empty((len(rows), encoder.dim), dtype=np.float32)
    start = 0
    while start < len(rows):
        longest = max(1, min(e.truncation_tokens, rows[start][3]))
        size = batch_rows(longest, e.token_budget or longest, e.batch_size or 1)
        chunk = rows[start:start + size]
        out[start:start + len(chunk)], _ = encoder.encode_texts([texts[r[2]] for r in chunk])
        start += len(chunk)
    return out


def calibrate(job: Job, encoder: Any, folder: ExportDir,
              read_texts: Callable[[Job, list[Row]], dict[int, str]]) -> Any:
    """The version's ranges: recorded in its manifest, or computed and recorded now."""
    from planner.embed.formats import calibration_ranges

    return folder.fixed_ranges(
        lambda: calibration_ranges(calibration_vectors(job, encoder, read_texts)))

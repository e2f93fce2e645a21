"""What an exported file holds, in each format and vector type.

Formats: `npz` (numpy's: arrays `ids` and `vectors`, and `ranges` for int8), `parquet`
(one row per document: `id`, `vector` as a fixed-size list, `tokens`; the vector type and
the int8 ranges in the schema metadata) and `safetensors` (tensors `vectors`, `tokens`,
the ids as UTF-8 bytes with their offsets, and `ranges` for int8).

Vector types: `float32` as the encoder gives them, `float16`, and the two quantized ones
of sentence-transformers' `quantize_embeddings`, computed with the same operations so the
values are the same: `int8` (per dimension, `floor((x - min) / ((max - min) / 255))`
clipped to 0..255, less 128, with the min and max of a calibration set: the `ranges`,
[2, dim] float32) and `binary` (`packbits(x > 0) - 128`: eight dimensions per int8).
"""

from __future__ import annotations

import itertools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from planner.errors import InputError

FORMATS = ("npz", "parquet", "safetensors")
VECTOR_DTYPES = ("float32", "float16", "int8", "binary")
METADATA_KEY = "campaign_planner"
# The numpy type each vector type is stored as.
STORED = {"float32": "float32", "float16": "float16", "int8": "int8", "binary": "int8"}


@dataclass
class Vectors:
    """The contents of one exported file."""

    ids: list[str]
    vectors: Any
    """[documents, dim] (binary: [documents, ceil(dim / 8)] int8)."""
    tokens: Any | None = None
    """Tokens fed to the model per document (parquet and safetensors)."""
    ranges: Any | None = None
    """int8 calibration: per-dimension [min, max] rows, [2, dim] float32."""


def calibration_ranges(vectors: Any) -> Any:
    """Per-dimension minimum and maximum, as `quantize_embeddings` computes them from its
    calibration embeddings: [2, dim] float32."""
    import numpy as np

    return np.vstack((np.min(vectors, axis=0), np.max(vectors, axis=0))).astype(np.float32)


def quantize(vectors: Any, vector_dtype: str, ranges: Any | None = None) -> Any:
    """float32 vectors in the export's type (the operations of `quantize_embeddings`)."""
    import numpy as np

    if vector_dtype == "float32":
        return vectors.astype(np.float32, copy=False)
    if vector_dtype == "float16":
        return vectors.astype(np.float16)
    if vector_dtype == "binary":
        return (np.packbits(vectors > 0, axis=-1) - 128).astype(np.int8)
    if vector_dtype == "int8":
        if ranges is None:
            raise ValueError("int8 vectors need calibration ranges")
        ranges = np.asarray(ranges, dtype=np.float32)
        starts = ranges[0, :]
        steps = (ranges[1, :] - starts) / 255
        steps = np.where(steps == 0, 1, steps)
        q = np.clip(np.floor((vectors - starts) / steps), 0, 255)
        return (q - 128).astype(np.int8)
    raise ValueError(f"unknown vector type {vector_dtype!r}")


def extension(fmt: str) -> str:
    """File name extension of a format."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}")
    return fmt


def dump(fh: IO[bytes], fmt: str, data: Vectors, vector_dtype: str) -> None:
    """Write `data` (vectors already in `vector_dtype`) to an open binary file."""
    if fmt == "npz":
        _npz(fh, data)
    elif fmt == "parquet":
        _parquet(fh, data, vector_dtype)
    elif fmt == "safetensors":
        _safetensors(fh, data, vector_dtype)
    else:
        raise ValueError(f"unknown format {fmt!r}")


def _npz(fh: IO[bytes], data: Vectors) -> None:
    import numpy as np

    arrays: dict[str, Any] = {"ids": np.array(data.ids, dtype=str), "vectors": data.vectors}
    if data.ranges is not None:
        arrays["ranges"] = np.asarray(data.ranges, dtype=np.float32)
    np.savez(fh, **arrays)


def _meta(data: Vectors, vector_dtype: str) -> str:
    meta: dict[str, Any] = {"vector_dtype": vector_dtype, "documents": len(data.ids)}
    if data.ranges is not None:
        meta["ranges"] = [[float(x) for x in row] for row in data.ranges]
    return json.dumps(meta)


def _tokens(data: Vectors) -> Any:
    import numpy as np

    if data.tokens is None:
        return np.zeros(len(data.ids), dtype=np.int32)
    return np.asarray(data.tokens, dtype=np.int32)


def _parquet(fh: IO[bytes], data: Vectors, vector_dtype: str) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("Parquet exports need pyarrow: pip install "
                         "'campaign-planner[parquet]'", field="embedding.format") from None
    width = int(data.vectors.shape[1])
    flat = pa.array(data.vectors.reshape(-1))
    table = pa.table({"id": pa.array(data.ids, pa.string()),
                      "vector": pa.FixedSizeListArray.from_arrays(flat, width),
                      "tokens": pa.array(_tokens(data))})
    table = table.replace_schema_metadata({METADATA_KEY: _meta(data, vector_dtype)})
    pq.write_table(table, fh)


def _safetensors(fh: IO[bytes], data: Vectors, vector_dtype: str) -> None:
    import numpy as np
    from safetensors.numpy import save

    encoded = [i.encode() for i in data.ids]
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    offsets[1:] = np.cumsum([len(b) for b in encoded])
    tensors = {"vectors": np.ascontiguousarray(data.vectors), "tokens": _tokens(data),
               "id_offsets": offsets,
               "id_bytes": np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()}
    if data.ranges is not None:
        tensors["ranges"] = np.asarray(data.ranges, dtype=np.float32)
    fh.write(save(tensors, metadata={METADATA_KEY: _meta(data, vector_dtype)}))


def load(path: str | Path, fmt: str) -> Vectors:
    """Read an exported file back."""
    import numpy as np

    p = Path(path)
    if fmt == "npz":
        with np.load(p, allow_pickle=False) as z:
            return Vectors(z["ids"].tolist(), z["vectors"], None,
                           z["ranges"] if "ranges" in z.files else None)
    if fmt == "parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(p)
        meta = json.loads((table.schema.metadata or {}).get(METADATA_KEY.encode(), b"{}"))
        column = table.column("vector").combine_chunks()
        width = column.type.list_size
        vectors = column.flatten().to_numpy(zero_copy_only=False).reshape(-1, width)
        ranges = np.array(meta["ranges"], dtype=np.float32) if "ranges" in meta else None
        return Vectors(table.column("id").to_pylist(), vectors,
                       table.column("tokens").to_numpy(), ranges)
    if fmt == "safetensors":
        from safetensors.numpy import load as st_load

        t = st_load(p.read_bytes())
        raw = t["id_bytes"].tobytes()
        off = t["id_offsets"].tolist()
        ids = [raw[a:b].decode() for a, b in itertools.pairwise(off)]
        return Vectors(ids, t["vectors"], t["tokens"], t.get("ranges"))
    raise ValueError(f"unknown format {fmt!r}")


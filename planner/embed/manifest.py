"""The export folder of one version: shard files, their manifest, and the locks that let
several workers (one per card) share it.

`manifest.toml` holds the settings every shard was made with and one entry per finished
shard. It is rewritten atomically under an exclusive lock, so concurrent workers never lose
each other's entries; a shard counts as finished only once its entry is there and its file
still has the recorded SHA-256.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

import tomli_w
from pydantic import Field, ValidationError

from planner.corpus.tokens import file_sha256
from planner.embed.formats import Vectors, dump
from planner.errors import InputError, from_validation
from planner.nofollow import create_new, ensure_dir, open_file, refusal
from planner.spec.base import Lax
from planner.tomlio import read_toml, write_atomic

HEADER = ("# campaign-planner embedding manifest: the settings every shard here was made with, "
          "and one entry per finished shard.\n\n")




class ShardDone(Lax):
    """One finished shard."""

    index: int
    """Shard number."""
    file: str
    """Its file, next to the manifest."""
    sha256: str
    """SHA-256 of the file."""
    documents: int
    """Vectors (and ids) in the file."""
    useful_tokens: int
    """Tokens fed to the model, padding excluded."""
    padded_tokens: int
    """Tokens computed, padding included."""
    seconds: float
    """Time spent embedding it."""
    device: str
    """Where it was embedded."""
    finished: str
    """When (ISO 8601)."""


class MergedFile(Lax):
    """A version's shards in one file, in the corpus's order."""

    file: str
    """Its name, next to the manifest (`merged.<format>`)."""
    sha256: str
    """SHA-256 of the file."""
    documents: int
    """Vectors (and ids) in it."""


class Manifest(Lax):
    """The settings of a version's exports and its finished shards."""

    fingerprint: str
    """SHA-256 over the settings fingerprint, the model and tokenizer files, and the dtype."""
    settings_fingerprint: str
    """The plan's fingerprint of model, tokenizer, truncation, pooling and normalization."""
    model: str
    """Model, as named in the plan."""
    model_sha256: str
    """SHA-256 of the weights loaded."""
    tokenizer: str
    """Tokenizer, as named in the plan."""
    tokenizer_sha256: str
    """SHA-256 of the tokenizer.json loaded."""
    truncation_tokens: int
    """Truncation."""
    pooling: str
    """Pooling."""
    normalization: str
    """Normalization."""
    dtype: str
    """Precision of the forward pass."""
    dim: int
    """Vector size."""
    backend: str = ""
    """What loaded the model: `builtin` or `sentence-transformers`."""
    stack: str = ""
    """The module stack the vectors went through."""
    prompt: str = ""
    """Text put before every document."""
    plan_id: str
    """The campaign the shards belong to."""
    version: int
    """Representation version."""
    shard_list_sha256: str
    """The shard list the shards follow."""
    # Left out while at their defaults: a float32 npz folder reads as it always did.
    format: str = Field(default="npz", exclude_if=lambda v: v == "npz")
    """File format of the shards (`npz`, `parquet`, `safetensors`)."""
    vector_dtype: str = Field(default="float32", exclude_if=lambda v: v == "float32")
    """Type of the exported vectors."""
    ranges: list[list[float]] | None = Field(default=None, exclude_if=lambda v: v is None)
    """int8 calibration: per-dimension minimum and maximum (two rows of `dim` values) of
    the calibration documents' vectors, fixed once for the version."""
    merged: MergedFile | None = Field(default=None, exclude_if=lambda v: v is None)
    """The single file `embed --merge` wrote, when it did."""
    shards: list[ShardDone] = []
    """Finished shards, in the order they finished."""


def shard_file(index: int, fmt: str = "npz") -> str:
    """File name of a shard."""
    return f"shard-{index:05d}.{fmt}"


def merged_file(fmt: str = "npz") -> str:
    """File name of a version's merged file, next to its shards."""
    return f"merged.{fmt}"


# A shard being written: `.shard-NNNNN.<format>.<pid>.tmp`.
TMP = re.compile(r"\.shard-(\d{5,})\.[a-z]+\.\d+\.tmp")


class ExportDir:
    """One version's export folder."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.manifest_path = path / "manifest.toml"

    def _locks(self) -> Path:
        # Made only by a worker that writes: checking the exports must write nothing.
        # The export folder and its .locks are ours: a link at either is refused.
        folder = self.path / ".locks"
        try:
            ensure_dir(folder, self.path.parent)
        except OSError as exc:
            raise InputError(f"cannot create the export folder: {exc.strerror}",
                             file=folder) from None
        return folder

    def _write(self, m: Manifest) -> None:
        try:
            write_atomic(self.manifest_path, _text(m), force=True)
        except OSError as exc:
            raise InputError(f"cannot write the manifest: {exc.strerror}; the shards already "
                             "recorded are kept", file=self.manifest_path) from None

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        lock = self._locks() / "manifest"
        with open(open_file(lock, os.O_WRONLY | os.O_CREAT), "w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def read(self) -> Manifest | None:
        """The manifest, or None before the first shard."""
        if self.manifest_path.is_symlink():
            raise refusal(self.manifest_path)
        if not self.manifest_path.exists():
            return None
        try:
            return Manifest.model_validate(read_toml(self.manifest_path))
        except ValidationError as exc:
            raise from_validation(exc, self.manifest_path) from None

    def open(self, header: Manifest) -> Manifest:
        """Start or continue: a folder made with other settings or another shard list is
        refused, so versions never mix."""
        with self._locked():
            current = self.read()
            if current is None:
                self._write(header)
                return header
        # The format and vector type first: they name what differs in words.
        for name in ("format", "vector_dtype", "fingerprint", "shard_list_sha256", "dim"):
            if getattr(current, name) != getattr(header, name):
                raise InputError(
                    f"these exports were made with other settings ({name} "
                    f"{str(getattr(current, name))[:12]} here, {str(getattr(header, name))[:12]} "
                    "now): versions never mix; export to another folder or version",
                    file=self.manifest_path, field=name)
        return current

    def record(self, entry: ShardDone) -> None:
        """Add a finished shard (replacing an earlier entry for the same shard)."""
        with self._locked():
            current = self.read()
            assert current is not None
            kept = [s for s in current.shards if s.index != entry.index]
            self._write(current.model_copy(update={"shards": [*kept, entry]}))

    def fixed_ranges(self, compute: Callable[[], Any]) -> Any:
        """The version's int8 calibration ranges ([2, dim] float32): the manifest's, or
        `compute()`'s recorded there under the lock, so every worker of the version
        quantizes with the same ranges, whichever came first."""
        import numpy as np

        with self._locked():
            current = self.read()
            assert current is not None
            if current.ranges is None:
                ranges = np.asarray(compute(), dtype=np.float32)
                current = current.model_copy(update={
                    "ranges": [[float(x) for x in row] for row in ranges]})
                self._write(current)
            return np.asarray(current.ranges, dtype=np.float32)

    def record_merged(self, entry: MergedFile) -> None:
        """Record the merged file of the version."""
        with self._locked():
            current = self.read()
            assert current is not None
            self._write(current.model_copy(update={"merged": entry}))

    def finished(self, entry: ShardDone | None) -> bool:
        """Whether a manifest entry's file is there with the recorded checksum."""
        if entry is None:
            return False
        path = self.path / entry.file
        return path.is_file() and file_sha256(path) == entry.sha256

    def sweep(self, indices: set[int]) -> int:
        """Remove the temporary files of these shards that no live worker is writing (left
        by a kill during a write); how many. Only the caller's own shards: a lock taken here
        for a moment never turns away another worker from a shard that is not ours to do."""
        if not self.path.is_dir():
            return 0
        removed = 0
        for tmp in self.path.iterdir():
            match = TMP.fullmatch(tmp.name)
            if match is None or int(match.group(1)) not in indices:
                continue
            lock = self.claim(int(match.group(1)))
            if lock is None:
                continue
            try:
                tmp.unlink(missing_ok=True)
                removed += 1
            finally:
                lock.close()
        return removed

    def claim(self, index: int) -> IO[Any] | None:
        """An exclusive, non-blocking lock on one shard; None when another worker holds it.
        The lock goes with the process, however it ends."""
        fd = open_file(self._locks() / f"shard-{index:05d}", os.O_WRONLY | os.O_CREAT)
        fh = open(fd, "w")  # noqa: SIM115
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            fh.close()
            return None
        return fh

    def write_shard(self, index: int, data: Vectors, fmt: str = "npz",
                    vector_dtype: str = "float32") -> Path:
        """Write a shard's ids and vectors atomically: a reader sees all of it or nothing."""
        final = self.path / shard_file(index, fmt)
        return write_vectors(final, data, fmt, vector_dtype, "the shard", "nothing of it was "
                             "kept, the shards already recorded are intact")


def write_vectors(final: Path, data: Vectors, fmt: str, vector_dtype: str, what: str,
                  kept: str) -> Path:
    """Write `data` to `final` atomically, through a temporary beside it that is created
    exclusively without following links (a leftover of a crashed worker with the same pid, or
    a planted link, is removed, never written through). `what` and `kept`: what the one-line
    error says could not be written, and what is left intact."""
    tmp = final.with_name(f".{final.name}.{os.getpid()}.tmp")
    with contextlib.suppress(FileNotFoundError):
        tmp.unlink()
    try:
        with open(create_new(tmp), "wb") as fh:
            dump(fh, fmt, data, vector_dtype)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, final)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise InputError(f"cannot write {what}: {exc.strerror or exc}; {kept}",
                         file=final) from None
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return final

def _text(m: Manifest) -> str:
    return HEADER + tomli_w.dumps(m.model_dump(mode="json"))

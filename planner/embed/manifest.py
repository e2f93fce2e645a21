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
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

import tomli_w
from pydantic import ValidationError

from planner.corpus.tokens import file_sha256
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
    shards: list[ShardDone] = []
    """Finished shards, in the order they finished."""


def shard_file(index: int) -> str:
    """File name of a shard."""
    return f"shard-{index:05d}.npz"


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
        for name in ("fingerprint", "shard_list_sha256", "dim"):
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

    def finished(self, entry: ShardDone | None) -> bool:
        """Whether a manifest entry's file is there with the recorded checksum."""
        if entry is None:
            return False
        path = self.path / entry.file
        return path.is_file() and file_sha256(path) == entry.sha256

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

    def write_shard(self, index: int, ids: list[str], vectors: Any) -> Path:
        """Write a shard's ids and vectors atomically: a reader sees all of it or nothing."""
        import numpy as np

        final = self.path / shard_file(index)
        tmp = self.path / f".{final.name}.{os.getpid()}.tmp"
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()  # a leftover of a crashed worker with the same pid
        try:
            with open(create_new(tmp), "wb") as fh:
                np.savez(fh, ids=np.array(ids, dtype=str), vectors=vectors)
                fh.flush()
                os.fsync(fh.fileno())
            os.replace(tmp, final)
        except OSError as exc:
            tmp.unlink(missing_ok=True)
            raise InputError(f"cannot write the shard: {exc.strerror or exc}; nothing of it "
                             "was kept, the shards already recorded are intact", file=final,
                             ) from None
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return final


def _text(m: Manifest) -> str:
    return HEADER + tomli_w.dumps(m.model_dump(mode="json"))

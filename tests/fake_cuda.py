"""A fake CUDA device for tests: `torch.cuda`'s memory API over CPU tensors, following the
caching allocator's documented rules (torch "CUDA semantics: memory management"):

- every new tensor storage made while `tracking()` is on is a block of the allocator
  (its bytes × `scale`, rounded up to 512); it is freed when the storage dies — by Python's
  own rules, so an exception's traceback keeps its frames' tensors alive until the handler
  exits, and reference cycles wait for `gc.collect()`;
- a freed block stays *reserved* (cached) and is reused, split, by a later request it can
  hold (best fit); free neighbours in a segment coalesce; only `empty_cache()` gives
  segments with nothing allocated back;
- `set_per_process_memory_fraction` caps *reserved* memory at fraction × total; a request
  the cache cannot serve and the cap cannot take frees the whole cache, counts a retry
  (`num_alloc_retries`), tries again, then raises `torch.OutOfMemoryError`;
- `reset_peak_memory_stats` sets the peaks to the current values;
  `reset_accumulated_memory_stats` zeroes the retry and OOM counters.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import torch
from torch._subclasses.fake_tensor import FakeTensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten

from planner.measure.backend import CudaBackend

MIB = 2**20


class _Block:
    """A piece of a segment: allocated, or free and cached."""

    __slots__ = ("free", "offset", "segment", "size")

    def __init__(self, segment: list[_Block], offset: int, size: int, free: bool = True
                 ) -> None:
        self.segment, self.offset, self.size, self.free = segment, offset, size, free


class _Event:
    def __init__(self, enable_timing: bool = True) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def synchronize(self) -> None:
        pass

    def elapsed_time(self, end: _Event) -> float:
        return (end.at - self.at) * 1000.0


class FakeCuda:
    """One fake card: `torch.cuda`'s functions that measurement uses, and the allocator."""

    Event = _Event

    def __init__(self, total_mib: float = 48676, *, scale: float = 1.0,
                 name: str = "NVIDIA RTX A6000", cc: tuple[int, int] = (8, 6),
                 fail_at_call: int | None = None) -> None:
        """`fail_at_call`: the allocation with this number runs out of memory whatever the
        cache holds (after the flush and the retry)."""
        self.total = int(total_mib * MIB)
        self.scale, self.name, self.cc = scale, name, cc
        self.fraction = 1.0
        self.allocated = self.reserved = self.peak_allocated = self.peak_reserved = 0
        self.retries = self.ooms = self.calls = 0
        self.segments: list[list[_Block]] = []
        self.live: dict[int, _Block] = {}
        self.fail_at_call = fail_at_call
        self.fail_always = False
        self.fractions: list[float] = []

    # --- torch.cuda's API ------------------------------------------------------------------
    def is_available(self) -> bool:
        return True

    def device_count(self) -> int:
        return 2

    def set_device(self, index: int) -> None:
        self.index = index

    def get_device_properties(self, index: int) -> Any:
        return SimpleNamespace(name=self.name, major=self.cc[0], minor=self.cc[1],
                               total_memory=self.total)

    def synchronize(self, index: int | None = None) -> None:
        pass

    def set_per_process_memory_fraction(self, fraction: float, index: int | None = None
                                        ) -> None:
        assert 0 < fraction <= 1
        self.fraction = fraction
        self.fractions.append(fraction)

    def reset_peak_memory_stats(self, index: int | None = None) -> None:
        self.peak_allocated, self.peak_reserved = self.allocated, self.reserved

    def reset_accumulated_memory_stats(self, index: int | None = None) -> None:
        self.retries = self.ooms = 0

    def memory_stats(self, index: int | None = None) -> dict[str, int]:
        return {"allocated_bytes.all.current": self.allocated,
                "allocated_bytes.all.peak": self.peak_allocated,
                "reserved_bytes.all.current": self.reserved,
                "reserved_bytes.all.peak": self.peak_reserved,
                "num_alloc_retries": self.retries, "num_ooms": self.ooms}

    # --- the allocator ---------------------------------------------------------------------
    @property
    def cap(self) -> int:
        return int(self.fraction * self.total)

    def malloc(self, nbytes: int) -> _Block:
        """A block for a new allocation (best fit in the cache, split; else a new segment),
        or torch.OutOfMemoryError."""
        self.calls += 1
        size = -(-int(nbytes * self.scale) // 512) * 512
        # An injected failure: the cache cannot serve this one (another process took it).
        injected = self.calls == self.fail_at_call or self.fail_always
        fits = ([] if injected else
                [b for seg in self.segments for b in seg if b.free and b.size >= size])
        if fits:
            block = min(fits, key=lambda b: (b.size, b.offset))
            if block.size > size:  # split: the rest stays cached in the same segment
                seg = block.segment
                rest = _Block(seg, block.offset + size, block.size - size)
                seg.insert(seg.index(block) + 1, rest)
                block.size = size
            block.free = False
        else:
            if self.reserved + size > self.cap or injected:
                self.empty_cache()
                self.retries += 1
                if self.reserved + size > self.cap or injected:
                    self.ooms += 1
                    raise torch.OutOfMemoryError(
                        f"CUDA out of memory (fake): tried to allocate {size / MIB:.1f} MiB "
                        f"with {self.reserved / MIB:.1f} of {self.cap / MIB:.1f} MiB reserved")
            segment: list[_Block] = []
            block = _Block(segment, 0, size, free=False)
            segment.append(block)
            self.segments.append(segment)
            self.reserved += size
        self.allocated += size
        self.peak_allocated = max(self.peak_allocated, self.allocated)
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        return block

    def _free(self, key: int) -> None:
        block = self.live.pop(key)
        self.allocated -= block.size
        block.free = True
        seg = block.segment
        i = seg.index(block)
        # Coalesce with free neighbours in the segment, as the allocator does.
        if i + 1 < len(seg) and seg[i + 1].free:
            block.size += seg.pop(i + 1).size
        if i > 0 and seg[i - 1].free:
            seg[i - 1].size += seg.pop(i).size

    def empty_cache(self) -> None:
        keep = [seg for seg in self.segments if not all(b.free for b in seg)]
        self.reserved = sum(b.size for seg in keep for b in seg)
        self.segments = keep

    def track(self, t: torch.Tensor) -> None:
        """Count `t`'s storage as an allocation, if it is new."""
        if isinstance(t, FakeTensor) or t.device.type != "cpu":
            return
        storage = t.untyped_storage()
        key, nbytes = storage.data_ptr(), storage.nbytes()
        if nbytes == 0 or key in self.live:
            return
        self.live[key] = self.malloc(nbytes)
        weakref.finalize(storage, self._free, key)

    @contextlib.contextmanager
    def tracking(self) -> Iterator[FakeCuda]:
        """Count every tensor made inside as device memory."""
        with _Mode(self):
            yield self

    def backend(self, index: int = 0) -> CudaBackend:
        """The project's own CUDA backend, on this fake device (tensors live on the CPU)."""
        return CudaBackend(index, api=self, device=torch.device("cpu"))


class _Mode(TorchDispatchMode):
    def __init__(self, fake: FakeCuda) -> None:
        super().__init__()
        self.fake = fake

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (),
                           kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for t in tree_flatten(out)[0]:
            if isinstance(t, torch.Tensor):
                self.fake.track(t)
        return out

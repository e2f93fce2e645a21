"""The options of `campaign-planner slurm`: a SLURM time limit in every form SLURM reads,
and the CPU and memory request of a task, checked before anything is written."""

from __future__ import annotations

import re

from planner.errors import InputError

# SLURM reads a time as MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS.
_FORMS = (
    (re.compile(r"(\d{1,7})"), (60,)),
    (re.compile(r"(\d{1,7}):(\d{1,2})"), (60, 1)),
    (re.compile(r"(\d{1,6}):(\d{1,2}):(\d{1,2})"), (3600, 60, 1)),
    (re.compile(r"(\d{1,4})-(\d{1,3})"), (86400, 3600)),
    (re.compile(r"(\d{1,4})-(\d{1,3}):(\d{1,2})"), (86400, 3600, 60)),
    (re.compile(r"(\d{1,4})-(\d{1,3}):(\d{1,2}):(\d{1,2})"), (86400, 3600, 60, 1)),
)
MAX_CPUS = 4096
"""Most CPUs one task may ask for."""
CPUS_PER_CARD = 8
"""Default CPUs per card of a task (data loading, tokenization), when not given."""
MEM_PER_CARD_GIB = 32
"""Default host memory per card of a task, when not given."""


def time_seconds(text: str) -> int:
    """Seconds of a SLURM time limit; InputError naming `--time` for anything else."""
    for pattern, units in _FORMS:
        m = pattern.fullmatch(text)
        if m:
            seconds = sum(int(v) * u for v, u in zip(m.groups(), units, strict=True))
            if seconds <= 0:
                break
            return seconds
    raise InputError("expected a SLURM time limit: MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or "
                     f"D-HH:MM:SS, above zero (got {text[:40]!r})", field="--time")


def warning_seconds(limit_s: int) -> int:
    """How long before the limit a task is warned (USR1): long enough for a run to write
    a checkpoint, short against the limit."""
    return max(1, min(300, max(30, limit_s // 10), limit_s // 2))


def cpus(value: int | None, cards: int) -> int:
    """`--cpus-per-task`: given, or CPUS_PER_CARD per card."""
    if value is None:
        return CPUS_PER_CARD * cards
    if not 1 <= value <= MAX_CPUS:
        raise InputError(f"must be between 1 and {MAX_CPUS}", field="--cpus-per-task")
    return value


def mem(value: str | None, cards: int) -> str:
    """`--mem` as SLURM reads it (a number with an optional K, M, G or T); default
    MEM_PER_CARD_GIB per card."""
    if value is None:
        return f"{MEM_PER_CARD_GIB * cards}G"
    if not re.fullmatch(r"[1-9]\d{0,8}[KMGT]?", value):
        raise InputError(f"expected a size such as 64G or 500M, got {value[:40]!r}",
                         field="--mem")
    return value


def directive_path(path: str, field: str) -> str:
    """A path that can stand double-quoted in an `#SBATCH` line: `"`, `%` (a filename
    pattern there) and line breaks cannot, and are refused."""
    if any(c in path for c in '"%\n\r\0'):
        raise InputError(f"{path[:80]!r}: a folder named in an #SBATCH line cannot hold "
                         "`\"`, `%` or a line break", field=field)
    return path

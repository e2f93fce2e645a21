"""The options of `campaign-planner slurm`: a SLURM time limit in every form SLURM reads,
each run's own limit and its length class, the CPU and memory request of a task (from the
card catalog by default), and the environment a task gets (`--export`), checked before
anything is written."""

from __future__ import annotations

import math
import re

from planner.errors import InputError
from planner.spec.catalog import Card

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
CPUS_PER_CARD = 4
"""CPUs per card of a task when neither `--cpus-per-task` nor the card's catalog entry
gives them: the smallest one-card cloud machines (g4dn.xlarge, g5.xlarge) have 4."""
MEM_PER_CARD_GIB = 12
"""Host memory (GiB) per card of a task when neither `--mem` nor the catalog gives it: 3/4
of those machines' 16 GiB."""
MEM_SHARE = 0.75
"""Share of a machine's host memory per card that a task asks for: a node's RealMemory is
below its RAM, and the system and the page cache need the rest."""
MIN_LIMIT_S = 600
"""Shortest time limit given to a task: start-up and a first checkpoint fit in it."""
LIMIT_FACTOR = 1.2
"""A task's time limit is its planned time times this (resume and start-up slack)."""
EXPORT_DEFAULT = ("PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LC_ALL", "TZ", "TMPDIR",
                  "VIRTUAL_ENV", "CONDA_PREFIX", "CONDA_DEFAULT_ENV", "PYTHONPATH",
                  "LD_LIBRARY_PATH", "HF_HOME", "HF_HUB_OFFLINE",
                  "CAMPAIGN_PROGRESS_EVERY_S", "CAMPAIGN_LINGER_S",
                  "WANDB_API_KEY", "WANDB_BASE_URL", "WANDB_ENTITY", "WANDB_PROJECT",
                  "WANDB_MODE", "WANDB_DIR", "WANDB_RUN_GROUP", "WANDB_NAME", "WANDB_RUN_ID",
                  "WANDB_RESUME", "MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_USERNAME",
                  "MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_TOKEN",
                  "MLFLOW_EXPERIMENT_NAME", "MLFLOW_TAGS", "TENSORBOARD_LOGGING_DIR")
"""The variables of the submitting shell a task gets by default (`--export`; SLURM adds its
own SLURM_*): what finds the software (the paths, a virtual or conda environment), the
task's own settings and the experiment trackers' (W&B, MLflow, TensorBoard), nothing else
of the login shell."""


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


def limit_seconds(hours: float) -> int:
    """A task's time limit for `hours` planned: LIMIT_FACTOR times it, in whole minutes, at
    least MIN_LIMIT_S."""
    return max(MIN_LIMIT_S, math.ceil(hours * LIMIT_FACTOR * 60) * 60)


def slurm_time(seconds: int) -> str:
    """`D-HH:MM:SS`, as SLURM reads a time limit."""
    days, rest = divmod(seconds, 86400)
    return f"{days}-{rest // 3600:02d}:{rest % 3600 // 60:02d}:{rest % 60:02d}"


def length_class(limit_s: int) -> int:
    """Runs whose limits fall in one class go out in one array with one `--time`: class k
    holds limits up to MIN_LIMIT_S * 2**k, so no run waits in a class at more than twice
    its own limit."""
    return max(0, math.ceil(math.log2(limit_s / MIN_LIMIT_S) - 1e-9))


def cpus_per_card(card: Card | None) -> int:
    """A task's CPUs per card by default: the catalog's, else CPUS_PER_CARD."""
    return card.host_cpus_per_card if card and card.host_cpus_per_card else CPUS_PER_CARD


def mem_per_card_gib(card: Card | None) -> int:
    """A task's host memory per card by default (GiB): MEM_SHARE of the catalog's, else
    MEM_PER_CARD_GIB."""
    if card and card.host_memory_gib_per_card:
        return max(1, math.floor(card.host_memory_gib_per_card * MEM_SHARE))
    return MEM_PER_CARD_GIB


def cpus(value: int | None, cards: int, card: Card | None = None) -> int:
    """`--cpus-per-task`: given, or the card's default per card."""
    if value is None:
        return cpus_per_card(card) * cards
    if not 1 <= value <= MAX_CPUS:
        raise InputError(f"must be between 1 and {MAX_CPUS}", field="--cpus-per-task")
    return value


def mem(value: str | None, cards: int, card: Card | None = None) -> str:
    """`--mem` as SLURM reads it (a number with an optional K, M, G or T); default: the
    card's per card."""
    if value is None:
        return f"{mem_per_card_gib(card) * cards}G"
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


def export_list(value: str | None) -> str:
    """`--export`: ALL, NONE, names replacing EXPORT_DEFAULT, or `+NAMES` added to it; the
    value of the `#SBATCH --export` line. Values are never written into the script (a
    secret stays in the submitting shell), so `NAME=value` is refused."""
    if value is None:
        return ",".join(EXPORT_DEFAULT)
    if value in ("ALL", "NONE"):
        return value
    names = value.removeprefix("+").split(",")
    if not all(re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]{0,127}", n) for n in names):
        raise InputError("expected ALL, NONE, or variable names separated by commas (a "
                         f"leading + adds them to the default), got {value[:60]!r}",
                         field="--export")
    chosen = [*EXPORT_DEFAULT, *names] if value.startswith("+") else names
    return ",".join(dict.fromkeys(chosen))

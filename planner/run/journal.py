"""The journal: one JSON object per line, appended and fsync'd before anything relies on it.

An append-only file survives a crash at any moment: a line cut short by a crash is
dropped on reading and trimmed before the next append. Readers (`status`, `--dry-run`)
only read it, so they never write anything. The fold turns the events into each run's
state.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.nofollow import ensure_dir, open_file, sync_dir
from planner.spec.paths import run_id_problem

RUN_DIR = "campaign-run"
"""Folder, inside the working directory, of the journal, the logs and the exit records."""


@dataclass(frozen=True)
class Workspace:
    """Where a plan runs: paths in the plan are relative to `workdir`."""

    workdir: Path

    @property
    def root(self) -> Path:
        return self.workdir / RUN_DIR

    @property
    def journal(self) -> Path:
        return self.root / "journal.jsonl"

    @property
    def lock(self) -> Path:
        return self.root / "executor.lock"

    def log(self, run_id: str) -> Path:
        return self.root / "logs" / f"{run_id}.log"

    def exit_record(self, run_id: str, attempt: int, token: str) -> Path:
        """Where the launcher of one attempt records its command's exit status; the token
        keeps a launcher orphaned by a crash from writing over a later attempt's record."""
        return self.root / "exits" / f"{run_id}.{attempt}.{token}.json"


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every complete event in the journal; [] when there is none yet."""
    try:
        fd = open_file(path, os.O_RDONLY, shared_ok=True)  # a link is refused, not read
        with os.fdopen(fd, "rb") as fh:
            raw = fh.read()
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise InputError(f"cannot read the journal: {exc.strerror}", file=path) from None
    events = []
    lines = raw.split(b"\n")
    for n, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except RecursionError:  # no event nests: one nested past the parser's depth is forged
            raise InputError(f"line {n + 1} is not a journal event: nested too deeply",
                             file=path) from None
        except ValueError:
            if n == len(lines) - 1:  # torn last line: the crash happened mid-write
                break
            raise InputError(f"line {n + 1} is not a journal event (not JSON, or a number "
                             "too long)", file=path) from None
        problem = shape_problem(event)
        if problem:
            raise InputError(f"line {n + 1} is not a journal event: {problem}", file=path)
        events.append(event)
    return events


_TIME = "time"
_INT_LIST = "list of card indices"
_RUN = "run id"
_TOKEN = "token"
FIELDS: dict[str, dict[str, Any]] = {
    "plan": {"fingerprint": str, "runs": dict, "path": str},
    "executor": {"cards": _INT_LIST, "window_start": _TIME},
    "started": {"run": _RUN, "attempt": int, "cards": _INT_LIST, "fingerprint": str},
    "checkpointed": {"run": _RUN, "attempt": int},
    "progress": {"run": _RUN, "attempt": int, "step": int},
    "exited": {"run": _RUN, "attempt": int, "outcome": str},
    "reset": {"run": _RUN},
    "done": {"run": _RUN, "fingerprint": str},
    "stop": {},
}
"""The fields each kind of event must have, and their types, for the fold to read it."""
OPTIONAL: dict[str, dict[str, Any]] = {
    "executor": {"pid": int},
    "started": {"pid": int, "pstart": int, "boot": str, "token": _TOKEN},
    "progress": {"at": _TIME, "checkpoint_step": int},
    "checkpointed": {"mtime": _TIME, "step": int},
    "exited": {"code": int, "reason": str},
}
"""Fields that may be absent or null, but have this type when present."""
INT_LIMIT = 2**31
"""Integers (attempts, pids, codes) are at most this: no arithmetic on them overflows."""
LAST_TIME = 7_258_118_400.0
"""Times are from 1970 to 2200 (this, in seconds since 1970): a span between any two, or
from one to now, is one every date and duration routine takes."""
_TOKEN_CHARS = frozenset("0123456789abcdef")


def _fits(value: Any, kind: Any) -> bool:
    if kind == _INT_LIST:
        return isinstance(value, list) and all(_fits(c, int) and 0 <= c < 4096 for c in value)
    if kind is int:
        return type(value) is int and -INT_LIMIT <= value <= INT_LIMIT
    if kind == _TIME:
        return type(value) in (int, float) and 0 <= value <= LAST_TIME  # nan fails
    if kind == _RUN:
        return isinstance(value, str) and run_id_problem(value) is None
    if kind == _TOKEN:  # names an exit record: never a path
        return isinstance(value, str) and 0 < len(value) <= 64 and set(value) <= _TOKEN_CHARS
    return isinstance(value, kind)


def shape_problem(event: Any) -> str | None:
    """Why a parsed line is not an event the fold can read, or None."""
    if not isinstance(event, dict):
        return f"a JSON {type(event).__name__}, not an object"
    if not _fits(event.get("t"), _TIME):
        return "no time `t` from 1970 to 2200"
    kind = event.get("ev")
    if not isinstance(kind, str) or kind not in FIELDS:
        return f"unknown event {str(kind)[:40]!r}"
    for name, want in FIELDS[kind].items():
        if not _fits(event.get(name), want):
            return f"{kind} event without a valid `{name}`"
    for name, want in OPTIONAL.get(kind, {}).items():
        if event.get(name) is not None and not _fits(event[name], want):
            return f"{kind} event with an invalid `{name}`"
    return None


class Journal:
    """The writer: only the executor holding the lock appends."""

    def __init__(self, path: Path) -> None:
        try:
            self._open(path)
        except OSError as exc:
            raise InputError(f"cannot open the journal: {exc.strerror or exc}",
                             file=path) from None

    def _open(self, path: Path) -> None:
        # The working directory is the user's; campaign-run/ and the journal in it are
        # ours, and a link at either is refused.
        ensure_dir(path.parent, path.parent.parent)
        new = not os.path.lexists(path)
        self.path = path
        self.fd = open_file(path, os.O_RDWR | os.O_CREAT | os.O_APPEND)
        size = os.fstat(self.fd).st_size
        if size:
            # Trim a torn tail so the next event does not glue onto half a line.
            tail = os.pread(self.fd, min(size, 1 << 20), max(0, size - (1 << 20)))
            if not tail.endswith(b"\n"):
                size = size - len(tail) + tail.rfind(b"\n") + 1
                os.ftruncate(self.fd, size)
        self.size = size
        if new:
            sync_dir(path.parent)

    def append(self, ev: str, **fields: Any) -> dict[str, Any]:
        """Record one event durably and return it."""
        event = {"t": round(time.time(), 3), "ev": ev, **fields}
        line = (json.dumps(event, separators=(",", ":")) + "\n").encode()
        try:
            written = os.write(self.fd, line)
            if written != len(line):
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            os.fsync(self.fd)
        except OSError as exc:
            # Half a line would glue onto the next event: the journal ends where it did.
            with contextlib.suppress(OSError):
                os.ftruncate(self.fd, self.size)
            raise InputError(f"cannot write the journal: {exc.strerror or exc}; runs still "
                             "going keep running, and `run` adopts them once it can write",
                             file=self.path) from None
        self.size += len(line)
        return event

    def close(self) -> None:
        os.close(self.fd)


@dataclass
class RunRecord:
    """What the journal says about one run."""

    id: str
    state: str = "pending"
    """pending; running; finished; failed (no retries left); retrying (failed, will run
    again); interrupted (stopped or cut off with work to resume)."""
    fingerprint: str = ""
    attempts: int = 0
    failures: int = 0
    exit_code: int | None = None
    reason: str = ""
    """Why the executor failed the run itself (it ignored its resume path), or empty."""
    first_start: float | None = None
    started: float | None = None
    ended: float | None = None
    busy_s: float = 0.0
    """Seconds spent in attempts, all of them."""
    checkpoints: int = 0
    last_checkpoint: float | None = None
    cards: list[int] = field(default_factory=list)
    process: dict[str, Any] = field(default_factory=dict)
    trace: list[dict[str, Any]] = field(default_factory=list)
    """Its `started`, `progress`, `checkpointed` and `exited` events, for the rates they
    show and the step a run resumes from."""


@dataclass
class History:
    """The journal folded: runs, the plan it was started with, the window's start."""

    runs: dict[str, RunRecord] = field(default_factory=dict)
    plan: dict[str, Any] | None = None
    window_start: float | None = None
    cards: list[int] = field(default_factory=list)
    executor_pid: int | None = None
    events: int = 0

    def apply(self, e: dict[str, Any]) -> None:
        """Fold one more event in."""
        self.events += 1
        ev = e["ev"]
        if ev == "plan":
            self.plan = e
            return
        if ev == "executor":
            self.cards, self.executor_pid = e.get("cards", []), e.get("pid")
            if self.window_start is None or e.get("window_explicit"):
                self.window_start = e["window_start"]
            return
        if "run" not in e:
            return
        r = self.runs.setdefault(e["run"], RunRecord(e["run"]))
        if ev == "started" and e["fingerprint"] != r.fingerprint:
            # Other parameters: a different run.
            self.runs[r.id] = r = RunRecord(r.id, attempts=r.attempts)
        if ev in ("started", "progress", "checkpointed", "exited"):
            r.trace.append(e)
        if ev == "started":
            r.fingerprint, r.state, r.attempts = e["fingerprint"], "running", e["attempt"]
            r.started, r.ended, r.cards = e["t"], None, e["cards"]
            r.first_start = r.first_start or e["t"]
            r.process = {k: e.get(k) for k in ("pid", "pstart", "boot", "token")}
        elif ev == "checkpointed":
            r.checkpoints += 1
            r.last_checkpoint = e["t"]
        elif ev == "exited":
            outcome = e["outcome"]
            r.exit_code, r.ended = e.get("code"), e["t"]
            r.reason = str(e.get("reason") or "")
            r.busy_s += e["t"] - (r.started or e["t"])
            r.failures += outcome in ("retry", "failed")
            r.state = {"finished": "finished", "failed": "failed",
                       "retry": "retrying"}.get(outcome, "interrupted")
        elif ev == "done":  # found done by its done record: finished by another launcher
            r.fingerprint, r.state, r.exit_code, r.ended = e["fingerprint"], "finished", 0, e["t"]
        elif ev == "reset":
            r.state, r.failures = "interrupted" if r.attempts else "pending", 0


def fold(events: list[dict[str, Any]]) -> History:
    """Each run's latest state from the events, in order."""
    h = History()
    for e in events:
        h.apply(e)
    return h

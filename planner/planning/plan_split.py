"""A large plan's run tables read and checked by two processes at once.

Reading a plan of a hundred thousand runs back (`plan_fast`, then `plan_bulk`) is seconds
of work for one processor, all of it on tables that do not depend on each other: a run is
checked on its own, and only the plan's own checks (ids unique, cards in range) look at all
of them. So, where the machine has a second processor, the run tables are cut in two at a
table's header: a forked process reads and checks the second part, exactly as the first
part is read and checked here meanwhile, and hands back the checked values of its runs in
the standard library's `marshal` format through a pipe (the values are plain: text, numbers
and lists of them, as the cache of checked plans keeps them). The plan's own checks then
run here, over all the runs.

Nothing is taken on trust from the other part: a part that is not in the form the fast
reading is sure of, a rule refused, a process that fails or is killed, all give None, and
the caller reads the whole plan in one process, which names what is wrong.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import signal
import threading
from typing import NamedTuple

from planner.planfile.plan import Plan, Run
from planner.planfile.rules import value_problem
from planner.planning import plan_bulk, plan_fast
from planner.planning.plan_bulk import construct

LARGE = 8 * 2**20
"""The smallest plan.toml (in bytes, about 10,000 runs) read in two processes: below it the
second process saves less than it costs to start."""
FIRST_SHARE = 0.55
"""The share of the run tables read here; the rest, read by the second process, costs it
more a table (it hands each run's values back, and this process only reads them)."""
_RUNS = b"\n\n[[runs]]\n"


class _Part(NamedTuple):
    """The process reading the second part, and the pipe it answers through."""

    pid: int
    answer: int


def read(raw: bytes, share: bool = True, at_least: int | None = None) -> Plan | None:
    """The checked plan of plan.toml's bytes, its run tables read in two processes; None
    when the plan is smaller than `at_least`, the machine has one processor, this process
    runs other threads (a fork copies none of them), or either part is not one the fast
    reading can vouch for. `share` as for `plan_bulk.plan`; `at_least`: `LARGE` unless
    given."""
    at_least = LARGE if at_least is None else at_least
    cut = _cut(raw) if len(raw) >= at_least and _can_fork() else None
    if cut is None:
        return None
    mid, end = cut
    part = _start(raw, mid + len(_RUNS), end, share)
    if part is None:
        return None
    try:
        # This part: the file without the second part's tables.
        reading = plan_fast.read(raw, columns=True, runs_until=mid)
        if reading is None or "runs" not in reading.columns or value_problem(reading.data):
            return None
        mine = plan_bulk.runs_of(reading.columns, reading.plain, share)
        theirs = _answer(part) if mine is not None else None
        if mine is None or theirs is None:
            return None
        made, derived = mine
        runs, derived_there = theirs
        made["runs"] += runs
        return plan_bulk.assemble(reading.data, made, derived and derived_there)
    finally:
        _stop(part)


def _can_fork() -> bool:
    if not hasattr(os, "fork") or threading.active_count() > 1:
        return False
    try:
        return len(os.sched_getaffinity(0)) > 1
    except AttributeError:  # no affinity on this system: its processor count
        return (os.cpu_count() or 1) > 1


def _cut(raw: bytes) -> tuple[int, int] | None:
    """Where the second part begins (the blank line before the first `[[runs]]` header
    past `FIRST_SHARE` of the array) and ends (the line break that ends its last line);
    None for an array too short to cut."""
    first = raw.find(_RUNS)
    if first < 0:
        return None
    end = plan_fast.arrays_end(raw, first + 2)  # where the reading here ends the array
    mid = raw.find(_RUNS, first + int((end - first) * FIRST_SHARE), end)
    return None if mid < 0 or not raw.endswith(b"\n") else (mid, end)


def _start(raw: bytes, start: int, stop: int, share: bool) -> _Part | None:
    """A forked process reading `raw[start:stop]` (run tables, from after a header to the
    line break ending the last one); None when no process can be started."""
    try:
        answer, write = os.pipe()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:
        os.close(answer)
        os.close(write)
        return None
    if pid == 0:  # the second process: it answers, then ends without running anything else
        code = 1
        try:
            os.close(answer)
            payload = _second(raw, start, stop, share)
            with os.fdopen(write, "wb") as fh:
                fh.write(payload)
            code = 0
        finally:
            os._exit(code)
    os.close(write)
    return _Part(pid, answer)


def _second(raw: bytes, start: int, stop: int, share: bool) -> bytes:
    """The second part's checked runs, as `_answer` reads them back; empty when it is not
    a part the fast reading can vouch for."""
    found = plan_fast.array(raw, start, stop, "runs")
    built = None if found is None else plan_bulk.array_runs(*found, share=share)
    if built is None:
        return b""
    runs, derived = built
    return marshal.dumps((derived, [r.__dict__ for r in runs]))


def _answer(part: _Part) -> tuple[list[Run], bool] | None:
    """The second part's runs and whether their commands were derived from their vectors,
    once its process has ended well; None otherwise."""
    with os.fdopen(os.dup(part.answer), "rb") as fh:
        payload = fh.read()
    _, status = os.waitpid(part.pid, 0)
    if not payload or os.waitstatus_to_exitcode(status) != 0:
        return None
    try:
        derived, values = marshal.loads(payload)
        del payload
        if type(derived) is not bool or type(values) is not list:
            return None
        return list(map(construct, values)), derived
    except (ValueError, TypeError, EOFError):
        return None


def _stop(part: _Part) -> None:
    """The second process ended (killed if it is still at work) and its pipe closed."""
    with contextlib.suppress(OSError):
        os.close(part.answer)
    with contextlib.suppress(ChildProcessError, ProcessLookupError, OSError):
        if os.waitpid(part.pid, os.WNOHANG) == (0, 0):
            os.kill(part.pid, signal.SIGKILL)
            os.waitpid(part.pid, 0)

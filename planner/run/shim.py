"""The small launcher between the executor and a run's command (standard library only).

The executor starts this file as the leader of a new process group and journals its pid
before telling it to go. It then starts the command, outlives the executor if the executor
dies, and records the command's exit status durably, so the next executor learns how a run
ended even when it was not there to see it.

    python -I shim.py EXIT_FILE --lock FD --done DONE_FILE FINGERPRINT
                      (--exec ARGV... | --shell COMMAND)

FD holds the run's lock (see `once.run_lock`). The launcher keeps it until it has
recorded the exit, after the command and its process group have ended; the command does
not inherit it, so a daemon the command leaves behind cannot keep the run locked.

When the command exits 0 the launcher writes the run's done record (see `once.py`) first,
into space it reserved before the command started, then the exit record. Every file is
created exclusively and opened without following links.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time

_NEW = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
DONE_SLOT_BYTES = 1024  # as in once.py, which this file cannot import (it runs with -I)


def _sync_dir(path: str) -> None:
    fd = os.open(os.path.dirname(path) or ".", os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fresh(path: str) -> int:
    """A file created here and now; a leftover plain file of a crash is replaced, a link is
    never followed (O_EXCL fails on it, and it is left for the executor to refuse)."""
    try:
        return os.open(path, _NEW, 0o644)
    except FileExistsError:
        if os.path.islink(path):
            raise
        os.unlink(path)
        return os.open(path, _NEW, 0o644)


def _write_exit(path: str, code: int | None) -> None:
    tmp = f"{path}.tmp"
    with os.fdopen(_fresh(tmp), "w", encoding="utf-8") as fh:
        json.dump({"code": code, "t": time.time()}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    _sync_dir(path)


def _reserve_done(done: str) -> tuple[str, int] | None:
    """Blank space for the done record, written while there is room for it."""
    slot = f"{done}.{os.getpid()}.slot"
    try:
        fd = _fresh(slot)
        os.write(fd, b" " * DONE_SLOT_BYTES)
        os.fsync(fd)
    except OSError as exc:
        print(f"campaign-planner: cannot reserve the done record {slot}: {exc.strerror}",
              flush=True)
        return None
    return slot, fd


def _write_done(slot: tuple[str, int] | None, done: str, fingerprint: str) -> None:
    """Fill in the reserved record and put it in place; a run that finished is then known
    as done by every launcher, whatever happens to the exit record or the journal."""
    if slot is None:
        return
    path, fd = slot
    by = f"{os.environ.get('CAMPAIGN_WORKDIR', '?')} on {os.uname().nodename}"
    record = {"run": os.environ.get("CAMPAIGN_RUN_ID", ""), "fingerprint": fingerprint,
              "finished": round(time.time(), 3), "by": by[:400]}
    data = json.dumps(record, separators=(",", ":")).encode()
    try:
        os.pwrite(fd, data, 0)  # in place: no new block needed
        os.fsync(fd)
        os.close(fd)
        os.replace(path, done)
        _sync_dir(done)
    except OSError as exc:
        print(f"campaign-planner: cannot write the done record {done}: {exc.strerror}",
              flush=True)


def _drop(slot: tuple[str, int] | None) -> None:
    if slot is not None:
        with contextlib.suppress(OSError):
            os.close(slot[1])
            os.unlink(slot[0])


LINGER_S = float(os.environ.get("CAMPAIGN_LINGER_S", "60"))
"""How long processes of a run may outlive its command's shell (a last checkpoint on
SIGTERM) before they are killed: no process of a run outlives its exit record."""


def _others_in_group() -> list[int]:
    me = os.getpid()
    pids = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return []
    for name in entries:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as fh:
                raw = fh.read()
        except OSError:
            continue
        fields = raw[raw.rfind(")") + 2:].split()
        if int(fields[2]) == me and fields[0] not in "ZX":
            pids.append(int(name))
    return pids


def _settle_group() -> None:
    deadline = time.monotonic() + LINGER_S
    while others := _others_in_group():
        if time.monotonic() > deadline:
            for pid in others:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            return
        time.sleep(0.1)


def _ignore(signum: int, frame: object) -> None:
    pass


def main(argv: list[str]) -> int:
    """Wait for the executor's go, run the command, record its exit status."""
    # The lock is held by keeping the fd open.
    exit_file, _, _lock, _, done_file, fingerprint, mode, *rest = argv
    # The executor writes "go" only after journalling this process; end of input means it
    # died in between: the command never starts, and the record says so.
    if sys.stdin.readline().strip() != "go":
        _write_exit(exit_file, None)
        return 0
    # The executor stops a run by signalling the whole process group; the command gets the
    # signal, and this launcher stays to record how the command ended. A handler (not
    # SIG_IGN, which the command would inherit) keeps the command's own defaults intact.
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, _ignore)
    args = rest if mode == "--exec" else ["/bin/sh", "-c", rest[0]]
    slot = _reserve_done(done_file)
    try:
        child = subprocess.Popen(args, stdin=subprocess.DEVNULL)
    except OSError as exc:
        print(f"campaign-planner: cannot start {args[0]!r}: {exc.strerror}", flush=True)
        _drop(slot)
        _write_exit(exit_file, 127)
        return 127
    code = child.wait()
    _settle_group()
    # A signal death is recorded the way a shell reports it.
    code = 128 - code if code < 0 else code
    if code == 0:
        _write_done(slot, done_file, fingerprint)
    else:
        _drop(slot)
    try:
        _write_exit(exit_file, code)
    except OSError as exc:  # a full disk: the executor sees no record, and counts a try
        print(f"campaign-planner: cannot record the exit status ({code}) in {exit_file}: "
              f"{exc.strerror}", flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

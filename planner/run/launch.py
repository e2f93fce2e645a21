"""Starting one attempt of a run: its log header, its environment, and its launcher
(`shim.py`) as the leader of a new process group, held until told to go."""

from __future__ import annotations

import secrets
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.nofollow import append_fd, ensure_dir
from planner.planfile.plan import Run
from planner.run.journal import Workspace
from planner.run.once import done_path
from planner.run.params import run_fingerprint
from planner.run.procs import SHIM, identity, run_env


@dataclass
class Spawned:
    """A launcher started and waiting for its go."""

    proc: subprocess.Popen[bytes]
    process: dict[str, Any]
    """Its identity (pid, start time, boot) and the token of its exit record."""
    mode: str
    resuming: bool


def spawn(ws: Workspace, run: Run, cards: list[int], attempt: int, lock: int,
          plan_path: Path, campaign_id: str, tracking: bool = True) -> Spawned:
    """Start the launcher of `attempt`; it holds `lock` and waits for `go()`; `tracking`:
    whether the run gets its W&B, MLflow and TensorBoard names."""
    wd = ws.workdir
    token = secrets.token_hex(4)
    exit_file = ws.exit_record(run.id, attempt, token)
    ensure_dir(exit_file.parent, wd)
    resuming = (wd / run.resume).exists()
    mode = "shell" if run.shell else "exec"
    log_path = ws.log(run.id)
    ensure_dir(log_path.parent, wd)
    with open(append_fd(log_path), "ab") as log:
        log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} attempt {attempt} on "
                  f"card(s) {cards} ({mode}); resume: "
                  f"{run.resume if resuming else 'none'}\n".encode())
        log.flush()
        env = run_env(run, wd, cards, attempt, plan_path, campaign_id, tracking, token)
        proc = subprocess.Popen(
            [sys.executable, "-I", str(SHIM), str(exit_file), "--lock", str(lock),
             "--done", str(done_path(wd, run)), run_fingerprint(run), "--exec", *run.argv],
            stdin=subprocess.PIPE, stdout=log, stderr=subprocess.STDOUT, cwd=wd, env=env,
            start_new_session=True, pass_fds=(lock,))
    return Spawned(proc, {**identity(proc.pid), "token": token}, mode, resuming)


def go(proc: subprocess.Popen[bytes]) -> None:
    """Let the launcher start the command (only once its start is journalled)."""
    try:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        proc.stdin.close()
    except BrokenPipeError:
        pass

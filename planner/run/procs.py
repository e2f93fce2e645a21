"""Processes of runs: how a command is started, its environment, and telling whether a
process recorded in the journal is still the same one alive, and one of this planner's.

A journal line is not proof: `campaign-run/` may be shared, and a pid, a start time and a
boot id are shown by /proc to everyone. A process is signalled or adopted only when it is
`ours`: alive as recorded, owned by this user, leading its own process group, and started
with an environment naming the run, the working directory and the attempt's token. That
environment is fixed when the launcher starts, and /proc shows it to its owner alone, so
no line written into the journal can make another process carry it."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from planner.hooks.env import RUN_TOKEN
from planner.planfile.plan import Run
from planner.run.once import lock_held, lock_path, run_lock
from planner.run.progress import progress_path
from planner.run.tracking import tracking_env

SHIM = Path(__file__).with_name("shim.py")
__all__ = ["SHIM", "TOKEN_ENV", "alive", "identity", "kill_leftovers", "lock_path", "ours",
           "run_env", "run_lock", "signal_group"]

TOKEN_ENV = RUN_TOKEN
"""The variable carrying the attempt's token (the one its journal line and exit record
name): what ties a live process to one attempt of one run."""


def run_env(run: Run, workdir: Path, cards: list[int], attempt: int, plan_path: Path,
            campaign_id: str, tracking: bool = True, token: str = "") -> dict[str, str]:
    """The run's environment: the executor's own, plus its cards and its identity, and
    with `tracking` its names for W&B, MLflow and TensorBoard (`planner.run.tracking`)."""
    resume = workdir / run.resume
    env = dict(os.environ)
    if tracking:
        env.update(tracking_env(run, workdir, campaign_id, os.environ))
    env.update({
        "CUDA_VISIBLE_DEVICES": ",".join(map(str, cards)),
        "CAMPAIGN_ID": campaign_id,
        "CAMPAIGN_RUN_ID": run.id,
        "CAMPAIGN_RUN_KIND": run.kind,
        "CAMPAIGN_SEED": "" if run.seed is None else str(run.seed),
        "CAMPAIGN_CHECKPOINT_DIR": str(workdir / run.checkpoint_dir),
        # Empty when there is nothing to resume from yet: the run starts from zero.
        "CAMPAIGN_RESUME": str(resume) if resume.exists() else "",
        "CAMPAIGN_RESUME_PATH": str(resume),
        "CAMPAIGN_EXPORT": str(workdir / run.export_name),
        "CAMPAIGN_ATTEMPT": str(attempt),
        "CAMPAIGN_WORKDIR": str(workdir),
        "CAMPAIGN_PLAN": str(plan_path),
        "CAMPAIGN_PROGRESS": str(progress_path(workdir, run)),
        TOKEN_ENV: token,
    })
    return env


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, int] | None:
    """State letter and start time (clock ticks since boot) from /proc, if there is one."""
    fields = _fields(pid)
    return (fields[0], int(fields[19])) if fields else None


def _fields(pid: int) -> list[str] | None:
    """/proc/PID/stat after the command's name (state first), if there is one."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return fields if len(fields) > 19 else None


def identity(pid: int) -> dict[str, Any]:
    """What tells this process apart from a later one that reuses its pid."""
    stat = _stat(pid)
    return {"pid": pid, "pstart": stat[1] if stat else None, "boot": _boot_id()}


def alive(process: dict[str, Any]) -> bool:
    """Whether the process recorded in `process` (from `identity`) still runs; a run on
    another machine (a SLURM task's) runs while its lock is held."""
    if isinstance(process.get("lock"), str):
        return lock_held(Path(process["lock"]))
    pid = process.get("pid")
    if not isinstance(pid, int) or pid <= 1:  # never init, never a process group
        return False
    if process.get("boot") and process["boot"] != _boot_id():
        return False  # the machine rebooted since
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    stat = _stat(pid)
    if stat is None:
        return not Path("/proc").is_dir()
    if stat[0] in "ZX":
        return False
    return process.get("pstart") is None or stat[1] == process["pstart"]


def _environ(pid: int) -> set[bytes] | None:
    """The environment process `pid` started with, when it is this user's own."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.geteuid():
            return None
        return set(Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"))
    except OSError:
        return None


def _same_folder(a: str, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def _marked(env: set[bytes], run_id: str, token: str, workdir: Path) -> bool:
    need = {f"CAMPAIGN_RUN_ID={run_id}".encode(), f"{TOKEN_ENV}={token}".encode()}
    if not need <= env:
        return False
    folders = [e[len(b"CAMPAIGN_WORKDIR="):] for e in env if e.startswith(b"CAMPAIGN_WORKDIR=")]
    return any(_same_folder(os.fsdecode(f), workdir) for f in folders)


def ours(process: dict[str, Any], run_id: str, workdir: Path) -> bool:
    """Whether the process `process` records (`identity` and its token) is provably the
    launcher this planner started for `run_id` in `workdir`, and still alive: its start
    time and boot as recorded, this user's, leading its own process group, and its
    environment naming the run, the folder and the token. Anything less is left alone."""
    pid, token = process.get("pid"), process.get("token")
    if not isinstance(token, str) or not token or process.get("pstart") is None:
        return False
    if not isinstance(pid, int) or not alive(process):
        return False
    env = _environ(pid)
    fields = _fields(pid)
    if env is None or fields is None or not _marked(env, run_id, token, workdir):
        return False
    # Read again after the environment: the same process all along, leading its group.
    return int(fields[2]) == pid and int(fields[19]) == process["pstart"] and alive(process)


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the run's whole process group (the launcher leads it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_leftovers(pgid: int, run_id: str, token: str, workdir: Path) -> int:
    """SIGKILL what is left of a run whose launcher died without a record: this user's
    processes of its group whose environment names its run, its attempt's token and its
    folder. Checking all keeps a reused pid number, or a pid a journal line made up, safe."""
    if not token:
        return 0  # an attempt without a token proves nothing about any process
    killed = 0
    try:
        entries = list(Path("/proc").iterdir())
    except OSError:
        return 0
    for entry in entries:
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "stat").read_text()
            if int(raw[raw.rfind(")") + 2:].split()[2]) != pgid:
                continue
            env = _environ(int(entry.name))
            if env is None or not _marked(env, run_id, token, workdir):
                continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
        except (OSError, ValueError, IndexError):
            continue
    return killed

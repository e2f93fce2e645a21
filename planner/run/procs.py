"""Processes of runs: how a command is started, its environment, and telling whether a
process recorded in the journal is still the same one alive."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path
from typing import Any

from planner.planning.plan import Run
from planner.run.once import lock_held, lock_path, run_lock
from planner.run.progress import progress_path
from planner.run.tracking import tracking_env

SHIM = Path(__file__).with_name("shim.py")
__all__ = ["SHIM", "alive", "identity", "kill_leftovers", "lock_path", "run_env",
           "run_lock", "signal_group"]


def run_env(run: Run, workdir: Path, cards: list[int], attempt: int, plan_path: Path,
            campaign_id: str, tracking: bool = True) -> dict[str, str]:
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
    })
    return env


def _boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def _stat(pid: int) -> tuple[str, int] | None:
    """State letter and start time (clock ticks since boot) from /proc, if there is one."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = raw[raw.rfind(")") + 2:].split()
    return fields[0], int(fields[19])


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


def signal_group(pid: int, sig: signal.Signals) -> None:
    """Signal the run's whole process group (the launcher leads it)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def kill_leftovers(pgid: int, run_id: str) -> int:
    """SIGKILL what is left of a run whose launcher died without a record: processes of
    its group that carry its run id. Checking both keeps a reused pid number safe."""
    marker = f"CAMPAIGN_RUN_ID={run_id}".encode()
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
            if marker not in (entry / "environ").read_bytes().split(b"\0"):
                continue
            os.kill(int(entry.name), signal.SIGKILL)
            killed += 1
        except (OSError, ValueError, IndexError):
            continue
    return killed

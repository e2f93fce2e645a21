"""A tiny deterministic training script for the executor's tests.

Its state is a running SHA-256 over the steps, seeded by the run's identity and
parameters, so a run that resumes correctly from any checkpoint ends in exactly the state
of an uninterrupted one. It checkpoints every few steps (atomically), resumes from
`--resume` when that exists, and appends what it does to `trace.jsonl` in its checkpoint
folder so tests can check every start, checkpoint and end.

    train.py --run-id ID --seed N --steps N --checkpoint-dir DIR --resume PATH
             --export PATH [--step-seconds S] [--every N] [key=value ...]

A parameter `crash=always` makes every attempt fail (exit 3) halfway; `crash=once` fails
the first attempt only; `slow=F` makes every step F times longer; `fresh=retry` ignores
the resume path on a retry; `report=checkpoint` adds `checkpoint_step` to its reports. It
reports its step to `CAMPAIGN_PROGRESS` after each one.
"""

from __future__ import annotations

import argparse
import fcntl
import hashlib
import json
import os
import sys
import time
from pathlib import Path


def params_fingerprint(run_id: str, seed: int, steps: int, params: dict[str, str]) -> str:
    """What the checkpoints of this run must agree on."""
    canon = json.dumps([run_id, seed, steps, sorted(params.items())])
    return hashlib.sha256(canon.encode()).hexdigest()


def initial_state(fp: str) -> str:
    return hashlib.sha256(f"init|{fp}".encode()).hexdigest()


def advance(state: str, step: int) -> str:
    return hashlib.sha256(f"{state}|{step}".encode()).hexdigest()


def expected_state(run_id: str, seed: int, steps: int, params: dict[str, str]) -> str:
    """The final state of an uninterrupted run."""
    state = initial_state(params_fingerprint(run_id, seed, steps, params))
    for step in range(steps):
        state = advance(state, step)
    return state


def write_atomic(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def trace(folder: Path, **event: object) -> None:
    with open(folder / "trace.jsonl", "a", encoding="utf-8") as fh:
        fh.write(json.dumps({"t": time.time(), "pid": os.getpid(), **event}) + "\n")
        fh.flush()
        os.fsync(fh.fileno())


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--run-id", required=True)
    p.add_argument("--seed", type=int, required=True)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--checkpoint-dir", type=Path, required=True)
    p.add_argument("--resume", type=Path, required=True)
    p.add_argument("--export", type=Path, required=True)
    p.add_argument("--step-seconds", type=float, default=0.01)
    p.add_argument("--every", type=int, default=5)
    p.add_argument("--gate", type=Path, help="past the first checkpoint, go on only once "
                   "this file exists: a test decides when a run may end, never a clock")
    p.add_argument("overrides", nargs="*")
    a = p.parse_args(argv)
    params = dict(o.split("=", 1) for o in a.overrides)
    folder = a.checkpoint_dir
    folder.mkdir(parents=True, exist_ok=True)
    # Two processes on one run's checkpoints would be the executor's worst bug: detect it.
    lock = os.open(folder / ".running", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        trace(folder, ev="concurrent")
        return 99
    fp = params_fingerprint(a.run_id, a.seed, a.steps, params)
    step, state = 0, initial_state(fp)
    attempt = int(os.environ.get("CAMPAIGN_ATTEMPT", "0"))
    # `fresh=retry`: a script that ignores its resume path on a retry (and holds just
    # before its first checkpoint, so that the executor, not a clock, ends it).
    ignores = params.get("fresh") == "retry" and attempt >= 2
    if a.resume.exists() and not ignores:
        ckpt = json.loads(a.resume.read_text())
        if ckpt["fp"] != fp:
            trace(folder, ev="mismatch")
            print("checkpoint made with other parameters", file=sys.stderr)
            return 4
        step, state = ckpt["step"], ckpt["state"]
    trace(folder, ev="start", step=step, fp=fp, params=params, seed=a.seed, attempt=attempt,
          cuda=os.environ.get("CUDA_VISIBLE_DEVICES"), env_resume=os.environ.get(
              "CAMPAIGN_RESUME"), env_run=os.environ.get("CAMPAIGN_RUN_ID"),
          env_seed=os.environ.get("CAMPAIGN_SEED"))
    print(f"{a.run_id}: start at step {step}", flush=True)
    crash = params.get("crash", "never")
    progress = Path(os.environ["CAMPAIGN_PROGRESS"]) if os.environ.get("CAMPAIGN_PROGRESS") \
        else None
    saved: dict[str, int] = {}
    """`report=checkpoint`: the step of the checkpoint saved last, as the contract's
    trainer callbacks report it."""
    while step < a.steps:
        if step >= a.steps // 2 and (crash == "always" or (crash == "once" and attempt <= 1)):
            print(f"{a.run_id}: crashing at step {step}", file=sys.stderr, flush=True)
            return 3
        while a.gate is not None and step >= a.every and not a.gate.exists():
            time.sleep(0.01)
        while ignores and step >= a.every - 1:
            time.sleep(0.01)
        time.sleep(a.step_seconds * float(params.get("slow", "1")))
        state = advance(state, step)
        step += 1
        if progress:
            write_atomic(progress, {"step": step, **saved})
        if step % a.every == 0 or step == a.steps:
            ckpt = {"step": step, "state": state, "fp": fp}
            write_atomic(folder / f"ckpt-{step:06d}.json", ckpt)
            write_atomic(a.resume, ckpt)
            trace(folder, ev="ckpt", step=step)
            if progress and params.get("report") == "checkpoint":
                saved = {"checkpoint_step": step}
                write_atomic(progress, {"step": step, **saved})
    a.export.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(Path(f"{a.export}.json"), {"state": state, "steps": step})
    trace(folder, ev="end", state=state)
    print(f"{a.run_id}: done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

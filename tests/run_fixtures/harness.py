"""Helpers for the executor's tests: a tiny preset around `train.py`, its plan, the executor
as a subprocess, and what the training script traced."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import tomli_w

from planner.cli.main import main as planner_main
from planner.planfile.export import read_plan
from planner.planfile.plan import Plan, Run
from tests.run_fixtures.train import expected_state

HERE = Path(__file__).parent
PY = shlex.quote(sys.executable)
TRAIN = (f"{PY} {shlex.quote(str(HERE / 'train.py'))} --run-id {{run_id}} --seed {{seed}} "
         f"--steps {{steps}} --checkpoint-dir {{checkpoint_dir}} --resume {{resume}} "
         f"--export {{export_name}} --step-seconds {{step_s}} --every {{every}} {{overrides}}")
EVALUATE = (f"{PY} {shlex.quote(str(HERE / 'evaluate.py'))} --run-id {{run_id}} "
            f"--checkpoint-dir {{checkpoint_dir}} --checkpoint {{resume}} --out {{export_name}}")


def preset(*, steps: int = 30, seeds: tuple[int, ...] = (0, 1), step_s: float = 0.01,
           every: int = 5, cards: int = 2, max_retries: int = 1,
           variants: dict[str, dict[str, str]] | None = None,
           robustness: list[str] | None = None, command: str | None = None,
           gate: Path | None = None, shell: bool = False) -> dict[str, Any]:
    """A preset dict whose runs are `train.py` (and `evaluate.py` for robustness); with
    `gate`, no run goes past its first checkpoint until that file exists; with `shell`,
    the command is a shell script."""
    figure = {"value": 1.0, "source": "entered"}
    memory = {"value": 10.0, "source": "entered"}
    variants = {"lr2": {"lr": "0.2"}} if variants is None else variants
    robustness = ["baseline"] if robustness is None else robustness
    train = command or TRAIN.replace("{step_s}", str(step_s)).replace("{every}", str(every))
    if gate is not None:
        train = train.replace(" {overrides}", f" --gate {shlex.quote(str(gate))} {{overrides}}")
    return {
        "campaign": {"name": "exec-test", "kind": "ablation", "window_days": 3,
                     "card": "a6000", "cards": cards},
        "overheads": {"stack_check_hours": 1.0, "startup_minutes": 1.0},
        "ablation": {
            "steps": steps, "seeds": list(seeds), "micro_batch": 4,
            "max_retries": max_retries, "command": train, **({"shell": True} if shell else {}),
            "baseline": {"factors": {"lr": "0.1", "crash": "never"}, "step_time_s": figure,
                         "peak_memory_gib": memory},
            "variants": [{"name": n, "changes": c, "step_time_s": figure,
                          "peak_memory_gib": memory} for n, c in variants.items()],
            "robustness": [{"name": "ood", "eval_minutes": 1.0, "applies_to": robustness,
                            "command": EVALUATE}] if robustness else [],
        },
        "order": {"cuda": "12.6", "pytorch": "2.7"},
    }


def make_plan(folder: Path, data: dict[str, Any] | None = None) -> Path:
    """Plan the preset into `folder` with the headless CLI; returns plan.toml's path."""
    folder.mkdir(parents=True, exist_ok=True)
    src = folder / "preset.toml"
    src.write_text(tomli_w.dumps(data or preset()))
    with contextlib.redirect_stdout(io.StringIO()):
        rc = planner_main(["--preset", str(src), "--out", str(folder), "--created",
                           "2026-01-01T00:00:00"])
    assert rc == 0
    return folder / "plan.toml"


def cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """`campaign-planner ARGS` in a fresh interpreter."""
    return subprocess.run([sys.executable, "-m", "planner", *args], capture_output=True,
                          text=True, timeout=timeout)


def slurm_export(tmp_path: Path, data: dict[str, Any], *options: str) -> tuple[Path, Path]:
    """A plan made from `data` under `tmp_path` and its SLURM export: (plan.toml, folder)."""
    plan_path = make_plan(tmp_path / "p", data)
    out = tmp_path / "slurm"
    proc = cli("slurm", str(plan_path), "--out", str(out), *options)
    assert proc.returncode == 0, proc.stderr
    return plan_path, out


def start(plan: Path, *args: str, out: Path | None = None) -> subprocess.Popen[bytes]:
    """The executor on `plan`, polling fast, as a subprocess."""
    sink = open(out, "ab") if out else subprocess.DEVNULL  # noqa: SIM115
    return subprocess.Popen([sys.executable, "-m", "planner", "run", str(plan), "--poll", "0.02",
                             "--grace", "5", *args], stdout=sink, stderr=subprocess.STDOUT)


def campaign_pids(workdir: Path) -> list[int]:
    """Processes whose environment names this working directory: launchers and runs."""
    marker = f"CAMPAIGN_WORKDIR={workdir}".encode()
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                env = (entry / "environ").read_bytes().split(b"\0")
                state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if marker in env and state not in "ZX":
                pids.append(int(entry.name))
    return pids


def wait_gone(workdir: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while campaign_pids(workdir):
        assert time.monotonic() < deadline, f"processes left: {campaign_pids(workdir)}"
        time.sleep(0.02)


def traces(plan: Plan, workdir: Path) -> dict[str, list[dict[str, Any]]]:
    """Each training run's trace events."""
    out = {}
    for run in plan.runs:
        if run.kind == "train":
            path = workdir / run.checkpoint_dir / "trace.jsonl"
            out[run.id] = [json.loads(x) for x in path.read_text().splitlines()] \
                if path.exists() else []
    return out


def exports(plan: Plan, workdir: Path) -> dict[str, Any]:
    """Each run's export, or None."""
    out = {}
    for run in plan.runs:
        p = workdir / f"{run.export_name}.json"
        out[run.id] = json.loads(p.read_text()) if p.exists() else None
    return out


def expected(run: Run) -> str:
    """The final state of `run` uninterrupted: the training script's own pure function."""
    params = dict(x.split("=", 1) for x in run.command.split()[-2:])
    assert run.seed is not None
    return expected_state(run.id, run.seed, run.steps, params)


def done_record(workdir: Path, run: Run) -> Path:
    """Where a run's done record is: beside its checkpoints."""
    return workdir / run.checkpoint_dir / f"{run.id}.done"


def journal(workdir: Path) -> list[dict[str, Any]]:
    path = workdir / "campaign-run" / "journal.jsonl"
    return [json.loads(x) for x in path.read_text().splitlines()]


def load(plan_path: Path) -> Plan:
    return read_plan(plan_path)


def plan_data(plan_path: Path) -> dict[str, Any]:
    """plan.toml's tables with the runs of its runs file as `runs` and `held`: the plan as a
    person editing it sees it."""
    import tomllib

    data = tomllib.loads(plan_path.read_text())
    entry = data.pop("runs_file", None)
    if entry is not None:
        rows = [json.loads(x) for x in (plan_path.parent / entry["name"]).read_text().splitlines()]
        data["runs"], data["held"] = rows[:entry["runs"]], rows[entry["runs"]:]
    return data


def write_plan_data(plan_path: Path, data: dict[str, Any]) -> Path:
    """Write `data` (as `plan_data` gives it) back as a person who edited the plan would:
    plan.toml naming its runs file, without the SHA-256 (then read as it stands). Returns
    the runs file's path."""
    rest = dict(data)
    runs, held = rest.pop("runs", []), rest.pop("held", [])
    runs_path = plan_path.parent / "runs.jsonl"
    runs_path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n"
                                 for r in [*runs, *held]))
    entry = {"name": runs_path.name, "runs": len(runs), "held": len(held)}
    plan_path.write_text(tomli_w.dumps({"runs_file": entry, **rest}))
    return runs_path


def copy_plan(plan_path: Path, to: Path) -> Path:
    """Copy a plan, its plan.toml and the runs file beside it, to `to` (the copy's
    plan.toml, any name); returns `to`."""
    import shutil

    to.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(plan_path, to)
    shutil.copy(plan_path.parent / "runs.jsonl", to.parent / "runs.jsonl")
    return to


def write_plan(plan: Plan, path: Path) -> Path:
    """Write `plan` as `path` (a plan.toml, any name) with its runs file beside it."""
    from planner.planfile.export import plan_files

    for target, text in plan_files(plan, path.parent):
        (path if target.name == "plan.toml" else target).write_text(text)
    return path


def edit_plan(plan_path: Path, run_index: int, **changes: Any) -> None:
    """Change fields of one run of the plan, as a person editing its files would."""
    data = plan_data(plan_path)
    data["runs"][run_index].update(changes)
    write_plan_data(plan_path, data)


def tree(folder: Path) -> dict[str, tuple[int, int]]:
    """Every file under `folder` with its size and mtime, to tell whether anything changed."""
    return {str(p.relative_to(folder)): (p.stat().st_size, p.stat().st_mtime_ns)
            for p in folder.rglob("*")}


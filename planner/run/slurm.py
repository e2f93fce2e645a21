"""A plan as SLURM job arrays, for a campaign spread over several machines.

SLURM does the distributing; each array task runs one run with the executor's rules (see
`slurm_task.py`), and the run's done record, shared with `run`, keeps a finished run from
running again wherever it is submitted from. submit.sh splits the runs into arrays that
fit the cluster's MaxArraySize; each training array gets one array of evaluations whose
task k runs the evaluations of training task k once that task has succeeded (aftercorr).
"""

from __future__ import annotations

import math
import shlex
from functools import partial
from pathlib import Path

from planner.errors import InputError
from planner.planning.plan import Plan, Run
from planner.planning.replace import replace_together
from planner.run import slurm_options as options
from planner.run.journal import RUN_DIR
from planner.run.once import done_path
from planner.run.params import manifest_text, run_fingerprint
from planner.run.slurm_options import time_seconds, warning_seconds
from planner.run.slurm_submit import submit_script
from planner.run.slurm_task import EVAL_MAIN, FUNCTIONS, TRAIN_MAIN


def _limit(hours: float, time_limit: str | None) -> tuple[str, int]:
    """The time limit of a task of `hours` planned, and how many seconds before it the
    task is warned (USR1)."""
    if time_limit:
        return time_limit, warning_seconds(time_seconds(time_limit))
    minutes = max(10, math.ceil(hours * 1.2 * 60))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00", warning_seconds(minutes * 60)


def _array(name: str, values: list[str]) -> str:
    return f"{name}=(\n" + "".join(f"  {shlex.quote(v)}\n" for v in values) + ")"


def _parent_done(by_id: dict[str, Run], run: Run, workdir: Path) -> tuple[str, str]:
    """Where the done record of the run `run` evaluates is, and its fingerprint ("" when
    that run is not in this plan: any record of it will do)."""
    if not run.depends_on:
        return "", ""
    parent = by_id.get(run.depends_on)
    if parent is None:  # an evaluation shares the folder of the run it evaluates
        return str(workdir / run.checkpoint_dir / f"{run.depends_on}.done"), ""
    return str(done_path(workdir, parent)), run_fingerprint(parent)


def _argv_arrays(runs: list[Run]) -> list[str]:
    """Every run's argument vector as one array of words, with where each run's starts
    and how many it has: each word a single-quoted literal, as the other arrays."""
    words: list[str] = []
    at, length = [], []
    for r in runs:
        at.append(str(len(words)))
        length.append(str(len(r.argv)))
        words.extend(r.argv)
    return [_array("WORDS", words), _array("ARGV_AT", at), _array("ARGV_LEN", length)]


def sbatch_script(plan: Plan, runs: list[Run], *, name: str, workdir: Path, out_dir: Path,
                  plan_path: Path, partition: str | None = None,
                  time_limit: str | None = None, cpus_per_task: int | None = None,
                  mem: str | None = None, evals_of: list[list[int]] | None = None) -> str:
    """One sbatch script holding `runs`; submit.sh gives each array its share of them.
    With `evals_of` (the evaluations of each training task, as indices into `runs`), task
    k runs the evaluations of training task k, one after the other."""
    c = plan.campaign
    what = "robustness evaluations" if evals_of is not None else "runs"
    gpus = max(len(r.card) for r in runs)
    if evals_of is None:
        hours = max(r.end_h - r.start_h for r in runs)
    else:
        hours = max(sum(runs[j].end_h - runs[j].start_h for j in g) for g in evals_of if g)
    limit, warn = _limit(hours, time_limit)
    slurm_dir = workdir / RUN_DIR / "slurm"
    head = [
        "#!/bin/bash",
        f"# campaign-planner: the {what} of campaign {c.id}, one array task per "
        f"{'training run' if evals_of is not None else 'run'}.",
        "# Submit with submit.sh beside this file, which splits the arrays to fit the",
        "# cluster. Re-submitting is safe: finished runs are skipped, interrupted ones",
        "# resume from their latest checkpoint.",
        f"#SBATCH --job-name={c.id}-{name}",
        f"#SBATCH --gres=gpu:{gpus}",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={options.cpus(cpus_per_task, gpus)}",
        f"#SBATCH --mem={options.mem(mem, gpus)}",
        f"#SBATCH --time={limit}",
        # Quoted, so a space in the folder does not end the option (sbatch strips them).
        f'#SBATCH --chdir="{options.directive_path(str(workdir), "--workdir")}"',
        f'#SBATCH --output="{options.directive_path(str(slurm_dir), "--workdir")}'
        '/%x-%A_%a.out"',
        "#SBATCH --open-mode=append",
        "#SBATCH --requeue",
        f"#SBATCH --signal=B:USR1@{warn}",
    ]
    if partition:
        head.append(f"#SBATCH --partition={partition}")
    by_id = {r.id: r for r in plan.runs}
    parents = [_parent_done(by_id, r, workdir) for r in runs]
    # Paths joined as `run` joins them: an absolute root arrives exactly as it is.
    body = [
        "set -uo pipefail",
        f"CAMPAIGN_ID={shlex.quote(c.id)}",
        f"CAMPAIGN_PLAN={shlex.quote(str(plan_path))}",
        f"WORKDIR={shlex.quote(str(workdir))}",
        f"MANIFESTS={shlex.quote(str(out_dir / 'manifests'))}",
        f"WARN={warn}  # seconds from the warning (USR1) to the time limit",
        f"TRACKING={int(c.tracking)}  # 1: name runs for W&B, MLflow, TensorBoard",
        _array("RUN_IDS", [r.id for r in runs]),
        _array("KINDS", [r.kind for r in runs]),
        _array("SEEDS", ["" if r.seed is None else str(r.seed) for r in runs]),
        _array("CKPTS", [str(workdir / r.checkpoint_dir) for r in runs]),
        _array("RESUMES", [str(workdir / r.resume) for r in runs]),
        _array("EXPORTS", [str(workdir / r.export_name) for r in runs]),
        _array("FPS", [run_fingerprint(r) for r in runs]),
        _array("DEPENDS_ON", [r.depends_on for r in runs]),
        _array("DEPENDS_DONE", [p[0] for p in parents]),
        _array("DEPENDS_FP", [p[1] for p in parents]),
        _array("MAX_RETRIES", [str(r.max_retries) for r in runs]),
        *_argv_arrays(runs),
    ]
    if evals_of is not None:
        body.append(_array("EVALS_OF", [" ".join(map(str, g)) for g in evals_of]))
    main = TRAIN_MAIN if evals_of is None else EVAL_MAIN
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n" + FUNCTIONS + main


def export(plan: Plan, plan_path: Path, out_dir: Path, workdir: Path, *, force: bool = False,
           partition: str | None = None, time_limit: str | None = None,
           throttle: int | None = None, cpus_per_task: int | None = None,
           mem: str | None = None) -> list[Path]:
    """Write the sbatch scripts, submit.sh and the runs' manifests into `out_dir`."""
    main = [r for r in plan.runs if not r.depends_on]
    evals = [r for r in plan.runs if r.depends_on]
    if not main:  # nothing to wait for inside this plan: one array
        main, evals = evals, []
    index = {r.id: i for i, r in enumerate(main)}
    evals_of: list[list[int]] = [[] for _ in main]
    for j, r in enumerate(evals):
        if r.depends_on not in index:
            raise InputError(f"run {r.id} evaluates {r.depends_on}, which is not a training "
                             "run of this plan", file=plan_path, field="runs.depends_on")
        evals_of[index[r.depends_on]].append(j)
    script = partial(sbatch_script, plan, workdir=workdir, out_dir=out_dir,
                     plan_path=plan_path, partition=partition, time_limit=time_limit,
                     cpus_per_task=cpus_per_task, mem=mem)
    files = [(out_dir / "campaign.sbatch", script(main, name="campaign"))]
    if evals:
        files.append((out_dir / "robustness.sbatch",
                      script(evals, name="robustness", evals_of=evals_of)))
    with_evals = [i for i, g in enumerate(evals_of) if g]
    files.append((out_dir / "submit.sh",
                  submit_script(len(main), with_evals, workdir, throttle)))
    files += [(out_dir / "manifests" / f"{r.id}.manifest.toml", manifest_text(r))
              for r in plan.runs]
    replace_together(out_dir, files, force=force)
    for path, _ in files:
        if path.suffix in (".sbatch", ".sh"):
            path.chmod(0o755)
    return [p for p, _ in files if p.parent == out_dir]

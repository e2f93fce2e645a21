"""A plan as SLURM job arrays, for a campaign spread over several machines.

SLURM does the distributing; each array task runs one run with the executor's rules (see
`slurm_task.py`), and the run's done record, shared with `run`, keeps a finished run from
running again wherever it is submitted from. Every run is a line of one run table
(`slurm_table.py`) that both scripts read, so a script's size does not grow with the plan.
submit.sh (`slurm_submit.py`) splits the runs into arrays that fit the cluster's
MaxArraySize and into classes of similar length, each array with its own time limit; each
training array gets arrays of evaluations whose task k runs the evaluations of training
task k once that task has succeeded (aftercorr).

With `--workdir`, the plan's folder is taken to be seen by the nodes at that folder: every
path under the plan's folder the tasks read (the plan, the manifests, the run table) is
named there, and a path outside it is named as it is.
"""

from __future__ import annotations

import shlex
from functools import partial
from pathlib import Path

from planner.errors import InputError
from planner.planfile.plan import Plan, Run
from planner.planfile.replace import replace_together
from planner.run import slurm_options as options
from planner.run.journal import RUN_DIR
from planner.run.params import manifest_text
from planner.run.slurm_options import limit_seconds, slurm_time, time_seconds, warning_seconds
from planner.run.slurm_submit import Tasks, submit_script
from planner.run.slurm_table import FIELDS, NAME, READ, digest, table_text
from planner.run.slurm_task import EVAL_MAIN, FUNCTIONS, TRAIN_MAIN
from planner.spec.catalog import Card, load_catalog


def _node_path(path: Path, plan_dir: Path, workdir: Path) -> Path:
    """`path` as the nodes see it: under the plan's folder, re-rooted at `workdir`."""
    try:
        return workdir / path.resolve().relative_to(plan_dir)
    except ValueError:
        return path


def sbatch_script(plan: Plan, *, name: str, main_count: int, paths: dict[str, Path],
                  table_sha: str, gpus: int, cpus: int, mem: str, limit_s: int,
                  partition: str | None, export_vars: str, evaluations: bool) -> str:
    """One sbatch script over the run table; submit.sh gives each array its share of the
    runs, its time limit and its warning (`--time`, `--signal`, the script's 2nd word)."""
    c = plan.campaign
    what = "robustness evaluations" if evaluations else "runs"
    warn = warning_seconds(limit_s)
    workdir = paths["workdir"]
    slurm_dir = workdir / RUN_DIR / "slurm"
    head = [
        "#!/bin/bash",
        f"# campaign-planner: the {what} of campaign {c.id}, one array task per "
        f"{'training run' if evaluations else 'run'}.",
        "# Submit with submit.sh beside this file, which splits the arrays to fit the",
        "# cluster and gives each its time limit. Re-submitting is safe: finished runs are",
        "# skipped, interrupted ones resume from their latest checkpoint. Stop a task with",
        "# `scancel --batch --signal=TERM JOBID` to give its run the grace to checkpoint;",
        "# a plain scancel gives it only the cluster's KillWait (30 s by default).",
        f"#SBATCH --job-name={c.id}-{name}",
        f"#SBATCH --gres=gpu:{gpus}",
        "#SBATCH --ntasks=1",
        f"#SBATCH --cpus-per-task={cpus}",
        f"#SBATCH --mem={mem}",
        f"#SBATCH --time={slurm_time(limit_s)}",
        # Quoted, so a space in the folder does not end the option (sbatch strips them).
        f'#SBATCH --chdir="{options.directive_path(str(workdir), "--workdir")}"',
        f'#SBATCH --output="{options.directive_path(str(slurm_dir), "--workdir")}'
        '/%x-%A_%a.out"',
        "#SBATCH --open-mode=append",
        "#SBATCH --requeue",
        f"#SBATCH --signal=B:USR1@{warn}",
        f"#SBATCH --export={export_vars}",
    ]
    if partition:
        head.append(f"#SBATCH --partition={partition}")
    body = [
        "set -uo pipefail",
        f"CAMPAIGN_ID={shlex.quote(c.id)}",
        f"CAMPAIGN_PLAN={shlex.quote(str(paths['plan']))}",
        f"WORKDIR={shlex.quote(str(workdir))}",
        f"MANIFESTS={shlex.quote(str(paths['manifests']))}",
        f"TABLE={shlex.quote(str(paths['table']))}",
        f"TABLE_SHA256={table_sha}",
        f"NFIELDS={len(FIELDS)}",
        f"MAIN_RUNS={main_count}  # the table's first rows: the training runs",
        f"WARN_DEFAULT={warn}  # seconds from the warning (USR1) to the time limit",
        f"TRACKING={int(c.tracking)}  # 1: name runs for W&B, MLflow, TensorBoard",
    ]
    main = EVAL_MAIN if evaluations else TRAIN_MAIN
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n" + FUNCTIONS + READ + main


def _card(plan: Plan) -> Card | None:
    """The plan's card in the shipped catalog (None for a card of the user's own)."""
    return load_catalog().cards.get(plan.campaign.card)


def export(plan: Plan, plan_path: Path, out_dir: Path, workdir: Path, *, force: bool = False,
           partition: str | None = None, time_limit: str | None = None,
           throttle: int | None = None, cpus_per_task: int | None = None,
           mem: str | None = None, export_vars: str | None = None) -> list[Path]:
    """Write the sbatch scripts, the run table, submit.sh and the runs' manifests into
    `out_dir`. Each task asks for `cpus_per_task` and `mem`, by default the catalog's
    figures for the plan's card; `throttle` (default: the plan's cards over a task's) caps
    each array's running tasks."""
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
        evals_of[index[r.depends_on]].append(len(main) + j)
    rows = main + evals
    given = time_seconds(time_limit) if time_limit else None

    def limit(hours: float) -> int:
        return given or limit_seconds(hours)

    limits = [limit(r.end_h - r.start_h) for r in main]
    eval_limits = [limit(sum(rows[j].end_h - rows[j].start_h for j in g)) if g else 0
                   for g in evals_of]
    node = partial(_node_path, plan_dir=plan_path.resolve().parent, workdir=workdir)
    paths = {"workdir": workdir, "plan": node(plan_path), "manifests": node(out_dir / "manifests"),
             "table": node(out_dir / NAME)}
    table = table_text(plan.campaign.id, rows, evals_of, plan.runs, workdir)
    card = _card(plan)
    exported = options.export_list(export_vars)

    def script(runs: list[Run], name: str, limit_s: int, evaluations: bool) -> str:
        gpus = max(len(r.card) for r in runs)
        return sbatch_script(plan, name=name, main_count=len(main), paths=paths,
                             table_sha=digest(table), gpus=gpus,
                             cpus=options.cpus(cpus_per_task, gpus, card),
                             mem=options.mem(mem, gpus, card), limit_s=limit_s,
                             partition=partition, export_vars=exported,
                             evaluations=evaluations)

    def cap(runs: list[Run]) -> int:
        return throttle or max(1, plan.campaign.cards // max(len(r.card) for r in runs))

    files = [(out_dir / "campaign.sbatch", script(main, "campaign", max(limits), False))]
    if evals:
        files.append((out_dir / "robustness.sbatch",
                      script(evals, "robustness", max(eval_limits), True)))
    files.append((out_dir / "submit.sh", submit_script(
        Tasks(limits, [warning_seconds(x) for x in limits], cap(main)),
        Tasks(eval_limits, [warning_seconds(x) if x else 0 for x in eval_limits],
              cap(evals) if evals else 0),
        paths["table"], workdir)))
    files.append((out_dir / NAME, table))
    files += [(out_dir / "manifests" / f"{r.id}.manifest.toml", manifest_text(r))
              for r in plan.runs]
    replace_together(out_dir, files, force=force)
    for path, _ in files:
        if path.suffix in (".sbatch", ".sh"):
            path.chmod(0o755)
    return [p for p, _ in files if p.parent == out_dir]

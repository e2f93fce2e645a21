"""A plan as SLURM job arrays, for a campaign spread over several machines.

SLURM does the distributing; each array task runs one run with the executor's rules: the
manifest check before a relaunch, resume from the latest checkpoint, retries up to the
run's limit, one log per run, and a done marker that keeps a finished run from running
again when the array is submitted again. Robustness evaluations form a second array that
starts once the first has ended, each task checking that the run it evaluates finished.
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
from planner.run.params import manifest_text, run_fingerprint
from planner.run.slurm_options import time_seconds, warning_seconds

TASK = r"""
i="${SLURM_ARRAY_TASK_ID:?submit this script with sbatch (see submit.sh)}"
RUN_ID="${RUN_IDS[$i]}"; KIND="${KINDS[$i]}"; SEED="${SEEDS[$i]}"; CKPT="${CKPTS[$i]}"
RESUME="${RESUMES[$i]}"; EXPORT="${EXPORTS[$i]}"; FP="${FPS[$i]}"
DEPENDS="${DEPENDS_ON[$i]}"; RETRIES="${MAX_RETRIES[$i]}"; COMMAND="${COMMANDS[$i]}"
cd "$WORKDIR" || exit 2
LOG="$WORKDIR/campaign-run/logs/$RUN_ID.log"; DONE="$WORKDIR/campaign-run/done"
TRIES="$WORKDIR/campaign-run/slurm/$RUN_ID.tries"
mkdir -p "$CKPT" "$(dirname "$EXPORT")" "$(dirname "$LOG")" "$DONE" "$(dirname "$TRIES")"
say() { printf '%s  %s\n' "$(date '+%F %T')" "$*"; }

if [[ -e "$DONE/$RUN_ID" ]]; then say "$RUN_ID finished before: not run again"; exit 0; fi
if [[ -n "$DEPENDS" && ! -e "$DONE/$DEPENDS" ]]; then
  say "$RUN_ID evaluates $DEPENDS, which has not finished: not run"; exit 3
fi
# The run's lock beside its checkpoints, the same one `campaign-planner run` takes: no two
# tasks or executors ever run one run at once. This script holds it; the run does not.
command -v flock >/dev/null || { say "flock (util-linux) is needed to lock $RUN_ID"; exit 2; }
exec 9>>"$CKPT/$RUN_ID.lock"
if ! flock -n 9; then
  say "$RUN_ID is running elsewhere (its lock $CKPT/$RUN_ID.lock is held): not run"; exit 3
fi
MANIFEST="$CKPT/$RUN_ID.manifest.toml"
if [[ -e "$MANIFEST" ]]; then
  if ! grep -qxF "fingerprint = \"$FP\"" "$MANIFEST"; then
    say "refused: the checkpoints of $RUN_ID in $CKPT were made with other parameters" \
        "(see $MANIFEST); restore the plan, or move that folder away to start afresh"
    exit 2
  fi
elif [[ "$KIND" == train && -e "$RESUME" ]]; then
  say "refused: $RESUME exists without $MANIFEST; move $CKPT away to start afresh"; exit 2
else
  cp "$MANIFESTS/$RUN_ID.manifest.toml" "$MANIFEST.tmp" && mv "$MANIFEST.tmp" "$MANIFEST"
fi

export CAMPAIGN_ID CAMPAIGN_PLAN WORKDIR
export CAMPAIGN_WORKDIR="$WORKDIR" CAMPAIGN_RUN_ID="$RUN_ID" CAMPAIGN_RUN_KIND="$KIND"
export CAMPAIGN_SEED="$SEED" CAMPAIGN_CHECKPOINT_DIR="$WORKDIR/$CKPT"
export CAMPAIGN_RESUME_PATH="$WORKDIR/$RESUME" CAMPAIGN_EXPORT="$WORKDIR/$EXPORT"
export CAMPAIGN_PROGRESS="$WORKDIR/$CKPT/$RUN_ID.progress.json"
child=""; stop=""
ISOLATE=""; command -v setsid >/dev/null && ISOLATE=setsid
# The run's whole process group, or just its shell where setsid is missing.
group() { if [[ -n "$ISOLATE" ]]; then kill "$1" -- "-$child"; else kill "$1" "$child"; fi; }
# scancel sends TERM: stop. The time-limit warning (--signal=B:USR1) stops the run and
# requeues this task, which resumes from the latest checkpoint in a fresh allocation.
trap 'stop=cancel; [[ -n "$child" ]] && group -TERM 2>/dev/null' TERM INT
trap 'stop=requeue; [[ -n "$child" ]] && group -TERM 2>/dev/null' USR1
# Failures (time limits included) so far in this job: requeues keep the count, so a run
# that never finishes is not requeued forever; a new submission starts afresh.
JOB="${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-?}}"; failures="${SLURM_RESTART_COUNT:-0}"
if [[ -r "$TRIES" ]] && read -r job count <"$TRIES" && [[ "$job" == "$JOB" ]]; then
  failures="$count"
fi
record() { printf '%s %s\n' "$JOB" "$failures" >"$TRIES.tmp" && mv "$TRIES.tmp" "$TRIES"; }
attempt=0
while :; do
  attempt=$((attempt + 1)); export CAMPAIGN_ATTEMPT="$attempt"
  if [[ -e "$RESUME" ]]; then CAMPAIGN_RESUME="$WORKDIR/$RESUME"; else CAMPAIGN_RESUME=""; fi
  export CAMPAIGN_RESUME
  say "=== $RUN_ID attempt $attempt (job ${SLURM_JOB_ID:-?}, restart" \
      "${SLURM_RESTART_COUNT:-0}) on $(hostname)," \
      "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}; resume: ${CAMPAIGN_RESUME:-none}" >>"$LOG"
  # In a session of its own, the run gets only the TERM this script forwards, never the
  # batch shell's USR1 warning, and none of its processes can slip out of the stop.
  $ISOLATE /bin/sh -c "$COMMAND" 9>&- >>"$LOG" 2>&1 &
  child=$!
  # `wait` returns early (128 + the signal) when a trap runs: wait until the child is
  # gone, then once more for its own status, which bash keeps.
  while kill -0 "$child" 2>/dev/null; do wait "$child"; done
  wait "$child"; code=$?
  # A process of the run may outlive its shell (writing a last checkpoint on TERM): give
  # it a minute, then make sure nothing of this attempt runs beside the next one.
  for _ in $(seq 60); do group -0 2>/dev/null || break; sleep 1; done
  group -KILL 2>/dev/null
  child=""
  say "$RUN_ID attempt $attempt exited with code $code" >>"$LOG"
  # The stop flag first: a run that saves and exits 0 on TERM has not finished.
  if [[ "$stop" == cancel ]]; then say "$RUN_ID cancelled: not finished"; exit 143; fi
  if [[ -z "$stop" && $code -eq 0 ]]; then
    say "job ${SLURM_JOB_ID:-?}" >"$DONE/$RUN_ID.tmp" && mv "$DONE/$RUN_ID.tmp" "$DONE/$RUN_ID"
    say "$RUN_ID finished"; exit 0
  fi
  failures=$((failures + 1)); record
  if (( failures > RETRIES )); then
    say "$RUN_ID failed $failures time(s) (time limits included): no retries left; log: $LOG"
    exit 1
  fi
  if [[ "$stop" == requeue ]]; then
    say "$RUN_ID stopped at the time limit: requeued to resume" \
        "($((RETRIES + 1 - failures)) tr(ies) left)"
    scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"; exit 75
  fi
  say "$RUN_ID exited with code $code: retrying ($((RETRIES + 1 - failures)) left)"
done
"""


def _limit(runs: list[Run], time_limit: str | None) -> tuple[str, int]:
    """The task time limit, and how many seconds before it the task is warned (USR1)."""
    if time_limit:
        return time_limit, warning_seconds(time_seconds(time_limit))
    hours = max(r.end_h - r.start_h for r in runs) * 1.2
    minutes = max(10, math.ceil(hours * 60))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00", warning_seconds(minutes * 60)


def _array(name: str, values: list[str]) -> str:
    return f"{name}=(\n" + "".join(f"  {shlex.quote(v)}\n" for v in values) + ")"


def sbatch_script(plan: Plan, runs: list[Run], *, name: str, workdir: Path, out_dir: Path,
                  plan_path: Path, partition: str | None = None,
                  time_limit: str | None = None, throttle: int | None = None,
                  cpus_per_task: int | None = None, mem: str | None = None) -> str:
    """One sbatch script: an array with one task per run in `runs`."""
    c = plan.campaign
    what = "robustness evaluations" if name == "robustness" else "runs"
    gpus = max(len(r.card) for r in runs)
    limit, warn = _limit(runs, time_limit)
    slurm_dir = workdir / RUN_DIR / "slurm"
    array = f"0-{len(runs) - 1}" + (f"%{throttle}" if throttle else "")
    head = [
        "#!/bin/bash",
        f"# campaign-planner: the {what} of campaign {c.id}, one array task per run.",
        "# Submit with submit.sh beside this file. Re-submitting is safe: finished runs are",
        "# skipped, interrupted ones resume from their latest checkpoint.",
        f"#SBATCH --job-name={c.id}-{name}",
        f"#SBATCH --array={array}",
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
    body = [
        "set -uo pipefail",
        f"CAMPAIGN_ID={shlex.quote(c.id)}",
        f"CAMPAIGN_PLAN={shlex.quote(str(plan_path))}",
        f"WORKDIR={shlex.quote(str(workdir))}",
        f"MANIFESTS={shlex.quote(str(out_dir / 'manifests'))}",
        _array("RUN_IDS", [r.id for r in runs]),
        _array("KINDS", [r.kind for r in runs]),
        _array("SEEDS", ["" if r.seed is None else str(r.seed) for r in runs]),
        _array("CKPTS", [r.checkpoint_dir for r in runs]),
        _array("RESUMES", [r.resume for r in runs]),
        _array("EXPORTS", [r.export_name for r in runs]),
        _array("FPS", [run_fingerprint(r) for r in runs]),
        _array("DEPENDS_ON", [r.depends_on for r in runs]),
        _array("MAX_RETRIES", [str(r.max_retries) for r in runs]),
        _array("COMMANDS", [r.command for r in runs]),
    ]
    return "\n".join(head) + "\n\n" + "\n".join(body) + "\n" + TASK


def submit_script(parents: list[int], workdir: Path) -> str:
    """submit.sh: the training array, then each evaluation once the training task it
    evaluates has succeeded (`parents[i]`: the training task of evaluation task i)."""
    logs = shlex.quote(str(workdir / RUN_DIR))
    lines = ["#!/bin/bash",
             "# Submit the campaign's arrays; pass extra sbatch options as arguments.",
             "set -euo pipefail",
             'cd "$(dirname "$0")"',
             f"mkdir -p {logs}/slurm {logs}/logs  # SLURM does not create output folders",
             'main=$(sbatch --parsable "$@" campaign.sbatch)',
             'echo "submitted campaign.sbatch as job ${main%%;*}"']
    if parents:
        lines += [
            "# Each evaluation waits for its own training task to succeed (afterok); one",
            "# whose training was cancelled or failed is dropped without taking a card.",
            "PARENTS=(" + " ".join(map(str, parents)) + ")",
            'for i in "${!PARENTS[@]}"; do',
            '  sbatch --parsable --array="$i" --kill-on-invalid-dep=yes '
            '--dependency=afterok:"${main%%;*}_${PARENTS[$i]}" "$@" robustness.sbatch '
            '>/dev/null',
            "done",
            'echo "submitted ${#PARENTS[@]} evaluation(s) of robustness.sbatch, each after '
            'the task of job ${main%%;*} it evaluates"']
    return "\n".join(lines) + "\n"


def export(plan: Plan, plan_path: Path, out_dir: Path, workdir: Path, *, force: bool = False,
           partition: str | None = None, time_limit: str | None = None,
           throttle: int | None = None, cpus_per_task: int | None = None,
           mem: str | None = None) -> list[Path]:
    """Write the sbatch scripts, submit.sh and the runs' manifests into `out_dir`."""
    main = [r for r in plan.runs if not r.depends_on]
    evals = [r for r in plan.runs if r.depends_on]
    if not main:  # nothing to wait for inside this plan: one array
        main, evals = evals, []
    script = partial(sbatch_script, plan, workdir=workdir, out_dir=out_dir,
                     plan_path=plan_path, partition=partition, time_limit=time_limit,
                     throttle=throttle, cpus_per_task=cpus_per_task, mem=mem)
    files = [(out_dir / "campaign.sbatch", script(main, name="campaign"))]
    if evals:
        files.append((out_dir / "robustness.sbatch", script(evals, name="robustness")))
    index = {r.id: i for i, r in enumerate(main)}
    for r in evals:
        if r.depends_on not in index:
            raise InputError(f"run {r.id} evaluates {r.depends_on}, which is not a training "
                             "run of this plan", file=plan_path, field="runs.depends_on")
    files.append((out_dir / "submit.sh",
                  submit_script([index[r.depends_on] for r in evals], workdir)))
    files += [(out_dir / "manifests" / f"{r.id}.manifest.toml", manifest_text(r))
              for r in plan.runs]
    replace_together(out_dir, files, force=force)
    for path, _ in files:
        if path.suffix in (".sbatch", ".sh"):
            path.chmod(0o755)
    return [p for p, _ in files if p.parent == out_dir]

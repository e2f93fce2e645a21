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

from planner.plan import Plan, Run
from planner.run.journal import RUN_DIR
from planner.run.params import manifest_text, run_fingerprint
from planner.tomlio import write_all

TASK = r"""
i="${SLURM_ARRAY_TASK_ID:?submit this script with sbatch (see submit.sh)}"
RUN_ID="${RUN_IDS[$i]}"; KIND="${KINDS[$i]}"; SEED="${SEEDS[$i]}"; CKPT="${CKPTS[$i]}"
RESUME="${RESUMES[$i]}"; EXPORT="${EXPORTS[$i]}"; FP="${FPS[$i]}"
DEPENDS="${DEPENDS_ON[$i]}"; RETRIES="${MAX_RETRIES[$i]}"; COMMAND="${COMMANDS[$i]}"
cd "$WORKDIR" || exit 2
LOG="$WORKDIR/campaign-run/logs/$RUN_ID.log"; DONE="$WORKDIR/campaign-run/done"
mkdir -p "$CKPT" "$(dirname "$EXPORT")" "$(dirname "$LOG")" "$DONE"
say() { printf '%s  %s\n' "$(date '+%F %T')" "$*"; }

if [[ -e "$DONE/$RUN_ID" ]]; then say "$RUN_ID finished before: not run again"; exit 0; fi
if [[ -n "$DEPENDS" && ! -e "$DONE/$DEPENDS" ]]; then
  say "$RUN_ID evaluates $DEPENDS, which has not finished: not run"; exit 3
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
child=""; stop=""
ISOLATE=""; command -v setsid >/dev/null && ISOLATE=setsid
# The run's whole process group, or just its shell where setsid is missing.
group() { if [[ -n "$ISOLATE" ]]; then kill "$1" -- "-$child"; else kill "$1" "$child"; fi; }
# scancel sends TERM: stop. The time-limit warning (--signal=B:USR1) stops the run and
# requeues this task, which resumes from the latest checkpoint in a fresh allocation.
trap 'stop=cancel; [[ -n "$child" ]] && group -TERM 2>/dev/null' TERM INT
trap 'stop=requeue; [[ -n "$child" ]] && group -TERM 2>/dev/null' USR1
failures=0; attempt=0
while :; do
  attempt=$((attempt + 1)); export CAMPAIGN_ATTEMPT="$attempt"
  if [[ -e "$RESUME" ]]; then CAMPAIGN_RESUME="$WORKDIR/$RESUME"; else CAMPAIGN_RESUME=""; fi
  export CAMPAIGN_RESUME
  say "=== $RUN_ID attempt $attempt (job ${SLURM_JOB_ID:-?}) on $(hostname)," \
      "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}; resume: ${CAMPAIGN_RESUME:-none}" >>"$LOG"
  # In a session of its own, the run gets only the TERM this script forwards, never the
  # batch shell's USR1 warning, and none of its processes can slip out of the stop.
  $ISOLATE /bin/sh -c "$COMMAND" >>"$LOG" 2>&1 &
  child=$!
  while :; do
    wait "$child"; code=$?
    kill -0 "$child" 2>/dev/null || break  # wait returns early when a trap runs
  done
  # A process of the run may outlive its shell (writing a last checkpoint on TERM): give
  # it a minute, then make sure nothing of this attempt runs beside the next one.
  for _ in $(seq 60); do group -0 2>/dev/null || break; sleep 1; done
  group -KILL 2>/dev/null
  child=""
  say "$RUN_ID attempt $attempt exited with code $code" >>"$LOG"
  if [[ $code -eq 0 ]]; then
    say "job ${SLURM_JOB_ID:-?}" >"$DONE/$RUN_ID.tmp" && mv "$DONE/$RUN_ID.tmp" "$DONE/$RUN_ID"
    say "$RUN_ID finished"; exit 0
  fi
  if [[ "$stop" == requeue ]]; then
    say "$RUN_ID stopped at the time limit: requeued to resume"
    scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"; exit 0
  fi
  if [[ -n "$stop" ]]; then say "$RUN_ID cancelled"; exit 143; fi
  failures=$((failures + 1))
  if (( failures > RETRIES )); then
    say "$RUN_ID failed $failures time(s): no retries left; log: $LOG"; exit 1
  fi
  say "$RUN_ID exited with code $code: retrying ($((RETRIES + 1 - failures)) left)"
done
"""


def _limit(runs: list[Run], time_limit: str | None) -> tuple[str, int]:
    """The task time limit, and how many seconds before it the task is warned (USR1):
    long enough for a run to write a checkpoint, short against the limit."""
    if time_limit:
        parts = time_limit.split("-")
        days = int(parts[0]) if len(parts) == 2 else 0
        hms = [int(x) for x in parts[-1].split(":")]
        # SLURM reads a bare number as minutes, M:S, H:M:S.
        units = {1: [60], 2: [60, 1], 3: [3600, 60, 1]}[len(hms)]
        seconds = days * 86400 + sum(v * u for v, u in zip(hms, units, strict=True))
        return time_limit, min(300, max(30, seconds // 10))
    hours = max(r.end_h - r.start_h for r in runs) * 1.2
    minutes = max(10, math.ceil(hours * 60))
    days, rest = divmod(minutes, 24 * 60)
    return f"{days}-{rest // 60:02d}:{rest % 60:02d}:00", min(300, max(30, minutes * 6))


def _array(name: str, values: list[str]) -> str:
    return f"{name}=(\n" + "".join(f"  {shlex.quote(v)}\n" for v in values) + ")"


def sbatch_script(plan: Plan, runs: list[Run], *, name: str, workdir: Path, out_dir: Path,
                  plan_path: Path, partition: str | None = None,
                  time_limit: str | None = None, throttle: int | None = None) -> str:
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
        f"#SBATCH --time={limit}",
        f"#SBATCH --chdir={workdir}",
        f"#SBATCH --output={slurm_dir}/%x-%A_%a.out",
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


def submit_script(has_robustness: bool, workdir: Path) -> str:
    """submit.sh: the training array, then the evaluations once it has ended."""
    logs = shlex.quote(str(workdir / RUN_DIR))
    lines = ["#!/bin/bash",
             "# Submit the campaign's arrays; pass extra sbatch options as arguments.",
             "set -euo pipefail",
             'cd "$(dirname "$0")"',
             f"mkdir -p {logs}/slurm {logs}/logs  # SLURM does not create output folders",
             'main=$(sbatch --parsable "$@" campaign.sbatch)',
             'echo "submitted campaign.sbatch as job ${main%%;*}"']
    if has_robustness:
        lines += ['eval=$(sbatch --parsable --dependency=afterany:"${main%%;*}" "$@" '
                  'robustness.sbatch)',
                  'echo "submitted robustness.sbatch as job ${eval%%;*}, after ${main%%;*}"']
    return "\n".join(lines) + "\n"


def export(plan: Plan, plan_path: Path, out_dir: Path, workdir: Path, *, force: bool = False,
           partition: str | None = None, time_limit: str | None = None,
           throttle: int | None = None) -> list[Path]:
    """Write the sbatch scripts, submit.sh and the runs' manifests into `out_dir`."""
    main = [r for r in plan.runs if not r.depends_on]
    evals = [r for r in plan.runs if r.depends_on]
    if not main:  # nothing to wait for inside this plan: one array
        main, evals = evals, []
    script = partial(sbatch_script, plan, workdir=workdir, out_dir=out_dir,
                     plan_path=plan_path, partition=partition, time_limit=time_limit,
                     throttle=throttle)
    files = [(out_dir / "campaign.sbatch", script(main, name="campaign"))]
    if evals:
        files.append((out_dir / "robustness.sbatch", script(evals, name="robustness")))
    files.append((out_dir / "submit.sh", submit_script(bool(evals), workdir)))
    files += [(out_dir / "manifests" / f"{r.id}.manifest.toml", manifest_text(r))
              for r in plan.runs]
    write_all(files, force=force)
    for path, _ in files:
        if path.suffix in (".sbatch", ".sh"):
            path.chmod(0o755)
    return [p for p, _ in files if p.parent == out_dir]

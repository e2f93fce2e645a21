"""submit.sh: the campaign's arrays, split to fit the cluster, submitted in order.

SLURM refuses an array index at or above MaxArraySize (1001 unless the cluster sets it),
so the training runs go out as arrays of at most that many tasks, each told its offset.
Every training array gets one array of evaluations: its task k runs the evaluations of
training task k, and waits for that one task to succeed (`aftercorr`), so one failed or
cancelled run never holds up the others' evaluations. `--throttle` applies to every array.
With `--test-only` nothing is queued: each sbatch only reports when it would start, and
the evaluations are checked without the dependency on a job that does not exist.
"""

from __future__ import annotations

import shlex
from pathlib import Path

from planner.run.journal import RUN_DIR

DEFAULT_MAX_ARRAY_SIZE = 1001
"""SLURM's MaxArraySize when `scontrol show config` does not answer."""

BODY = r"""
test_only=""
for arg in "$@"; do [[ "$arg" == --test-only ]] && test_only=1; done
for d in "$RUNDIR" "$RUNDIR/slurm" "$RUNDIR/logs"; do  # SLURM does not create them
  if [[ -L "$d" ]]; then
    echo "submit.sh: $d is a symbolic link: refused, nothing is written through a link" >&2
    exit 2
  fi
  mkdir -p -- "$d"
done
max=$(scontrol show config 2>/dev/null | awk '$1 == "MaxArraySize" {print $3; exit}') || true
[[ "$max" =~ ^[0-9]{1,9}$ ]] || max=DEFAULT_MAX
if (( max < 1 )); then echo "submit.sh: this cluster allows no job arrays" >&2; exit 2; fi
ranges() {  # 0 1 2 5 7 8 -> 0-2,5,7-8
  local out="" first="" last="" n
  for n in "$@" ""; do
    if [[ -n "$last" && "$n" == "$((last + 1))" ]]; then last=$n; continue; fi
    if [[ -n "$first" ]]; then
      out+="${out:+,}$first"; [[ "$last" != "$first" ]] && out+="-$last"
    fi
    first=$n; last=$n
  done
  printf '%s' "$out"
}
job=""
submit() {  # submit SBATCH-ARGS...: sets $job (empty with --test-only)
  local out
  job=""
  if [[ -n "$test_only" ]]; then sbatch "$@"; return; fi
  out=$(sbatch --parsable "$@")
  job="${out%%;*}"
  if [[ ! "$job" =~ ^[0-9]+$ ]]; then
    echo "submit.sh: sbatch answered no job id (${out:-nothing}); stopping here" >&2
    exit 1
  fi
}
chunks=0
for ((lo = 0; lo < TRAIN; lo += max)); do
  n=$((TRAIN - lo < max ? TRAIN - lo : max))
  submit --array="0-$((n - 1))$THROTTLE" "$@" campaign.sbatch "$lo"
  chunks=$((chunks + 1))
  [[ -n "$test_only" ]] || echo "submitted campaign.sbatch runs $lo-$((lo + n - 1)) as job $job"
  tasks=()
  for g in ${EVAL_TASKS[@]+"${EVAL_TASKS[@]}"}; do
    (( g >= lo && g < lo + n )) && tasks+=("$((g - lo))")
  done
  (( ${#tasks[@]} )) || continue
  after=()
  [[ -n "$test_only" ]] || after=(--dependency="aftercorr:$job" --kill-on-invalid-dep=yes)
  submit ${after[@]+"${after[@]}"} --array="$(ranges "${tasks[@]}")$THROTTLE" "$@" \
    robustness.sbatch "$lo"
  if [[ -n "$test_only" ]]; then
    echo "robustness.sbatch checked without its dependency (--test-only queues no job)"
  else
    echo "submitted robustness.sbatch (${#tasks[@]} task(s), each after its own run's task)" \
         "as job $job"
  fi
done
[[ -z "$test_only" ]] || echo "--test-only: $chunks training array(s) checked, nothing queued"
"""


def submit_script(train: int, eval_tasks: list[int], workdir: Path,
                  throttle: int | None) -> str:
    """submit.sh for `train` training runs; `eval_tasks`: the training tasks (indices into
    campaign.sbatch) that have evaluations in robustness.sbatch."""
    lines = ["#!/bin/bash",
             "# Submit the campaign's arrays; extra arguments go to every sbatch call",
             "# (--test-only: check them, queue nothing).",
             "set -euo pipefail",
             'cd "$(dirname "$0")"',
             f"RUNDIR={shlex.quote(str(workdir / RUN_DIR))}",
             f"TRAIN={train}",
             f"THROTTLE={shlex.quote(f'%{throttle}' if throttle else '')}",
             "EVAL_TASKS=(" + " ".join(map(str, eval_tasks)) + ")"]
    return "\n".join(lines) + BODY.replace("DEFAULT_MAX", str(DEFAULT_MAX_ARRAY_SIZE))

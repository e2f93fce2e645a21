"""submit.sh: the campaign's arrays, split to fit the cluster and by run length, submitted
in order.

SLURM refuses an array index at or above MaxArraySize (1001 unless the cluster sets it),
so the training runs go out in ranges of at most that many tasks, each told its offset.
Within a range, runs of one length class (`slurm_options.length_class`) go out as one
array with its own `--time`, its longest run's limit, and its own warning
(`--signal=B:USR1@W`, also the script's second word, so the task knows its grace). Every
training array gets arrays of evaluations, one per length class of those: task k runs the
evaluations of training task k, and waits for that one task to succeed (`aftercorr`), so
one failed or cancelled run never holds up the others' evaluations. Each array runs at
most its throttle's tasks at once (`%N`). With `--test-only` nothing is queued: each
sbatch only reports when it would start, and the evaluations are checked without the
dependency on a job that does not exist.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from planner.run.journal import RUN_DIR
from planner.run.slurm_options import length_class

DEFAULT_MAX_ARRAY_SIZE = 1001
"""SLURM's MaxArraySize when `scontrol show config` does not answer."""


@dataclass(frozen=True)
class Tasks:
    """One script's array tasks: each one's time limit and warning in seconds (0: the
    task has nothing to run), and the array throttle."""

    limits: list[int]
    warns: list[int]
    throttle: int


BODY = r"""
test_only=""
for arg in "$@"; do [[ "$arg" == --test-only ]] && test_only=1; done
if [[ ! -f "$TABLE" || ! -r "$TABLE" ]]; then
  echo "submit.sh: the run table is not at $TABLE, where the tasks will read it: copy the" \
       "plan's folder, with this export in it, to the --workdir the export was made for" >&2
  exit 2
fi
for d in "$RUNDIR" "$RUNDIR/slurm" "$RUNDIR/logs"; do  # SLURM does not create them
  if [[ -L "$d" ]]; then
    echo "submit.sh: $d is a symbolic link: refused, nothing is written through a link" >&2
    exit 2
  fi
  mkdir -p -- "$d"
done
config=$(scontrol show config 2>/dev/null) || config=""
max=$(awk '$1 == "MaxArraySize" {print $3; exit}' <<<"$config")
[[ "$max" =~ ^[0-9]{1,9}$ ]] || max=DEFAULT_MAX
if (( max < 1 )); then echo "submit.sh: this cluster allows no job arrays" >&2; exit 2; fi
killwait=$(awk '$1 == "KillWait" {print $3; exit}' <<<"$config")
[[ "$killwait" =~ ^[0-9]{1,9}$ ]] || killwait=30
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
hms() { printf '%d-%02d:%02d:%02d' $(($1 / 86400)) $(($1 % 86400 / 3600)) $(($1 % 3600 / 60)) \
  $(($1 % 60)); }
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
  hi=$((TRAIN - lo < max ? TRAIN : lo + max))
  mapfile -t classes < <(printf '%s\n' "${CLASSES[@]:lo:hi - lo}" | sort -un)
  for c in "${classes[@]}"; do
    idx=(); t=0; w=0
    for ((i = lo; i < hi; i++)); do
      (( CLASSES[i] == c )) || continue
      idx+=("$((i - lo))")
      (( LIMITS[i] > t )) && { t=${LIMITS[i]}; w=${WARNS[i]}; }
    done
    submit --array="$(ranges "${idx[@]}")$THROTTLE" --time="$(hms "$t")" \
      --signal="B:USR1@$w" "$@" campaign.sbatch "$lo" "$w"
    chunks=$((chunks + 1))
    [[ -n "$test_only" ]] || echo "submitted campaign.sbatch: ${#idx[@]} of runs" \
      "$lo-$((hi - 1)), --time=$(hms "$t"), as job $job"
    mapfile -t eclasses < <(for i in "${idx[@]}"; do
      [[ "${EVAL_CLASSES[lo + i]}" == - ]] || echo "${EVAL_CLASSES[lo + i]}"; done | sort -un)
    for e in ${eclasses[@]+"${eclasses[@]}"}; do
      tasks=(); t=0; w=0
      for i in "${idx[@]}"; do
        [[ "${EVAL_CLASSES[lo + i]}" == "$e" ]] || continue
        tasks+=("$i")
        (( EVAL_LIMITS[lo + i] > t )) && { t=${EVAL_LIMITS[lo + i]}; w=${EVAL_WARNS[lo + i]}; }
      done
      after=()
      [[ -n "$test_only" ]] || after=(--dependency="aftercorr:$job" --kill-on-invalid-dep=yes)
      submit ${after[@]+"${after[@]}"} --array="$(ranges "${tasks[@]}")$EVAL_THROTTLE" \
        --time="$(hms "$t")" --signal="B:USR1@$w" "$@" robustness.sbatch "$lo" "$w"
      if [[ -n "$test_only" ]]; then
        echo "robustness.sbatch checked without its dependency (--test-only queues no job)"
      else
        echo "submitted robustness.sbatch: ${#tasks[@]} task(s), each after its own run's" \
             "task, --time=$(hms "$t"), as job $job"
      fi
    done
  done
done
if [[ -n "$test_only" ]]; then
  echo "--test-only: $chunks training array(s) checked, nothing queued"
else
  echo "To stop a task and give its run the time to checkpoint:" \
       "scancel --batch --signal=TERM JOBID; a plain scancel gives it ${killwait}s (KillWait)."
fi
"""


def _words(values: Sequence[int | str]) -> str:
    return " ".join(map(str, values))


def submit_script(train: Tasks, evals: Tasks, table: Path, workdir: Path) -> str:
    """submit.sh for the training tasks `train` and, per training task, its evaluations'
    task `evals` (limit 0: none); `table`: the run table as the tasks will read it."""
    def throttle(n: int) -> str:
        return shlex.quote(f"%{n}" if n else "")

    lines = ["#!/bin/bash",
             "# Submit the campaign's arrays; extra arguments go to every sbatch call",
             "# (--test-only: check them, queue nothing).",
             "set -euo pipefail",
             'cd "$(dirname "$0")"',
             f"RUNDIR={shlex.quote(str(workdir / RUN_DIR))}",
             f"TABLE={shlex.quote(str(table))}",
             f"TRAIN={len(train.limits)}",
             f"THROTTLE={throttle(train.throttle)}",
             f"EVAL_THROTTLE={throttle(evals.throttle)}",
             "# Per training task: its time limit and warning (seconds), its length class;",
             "# then the same for its evaluations' task (class -: it has none).",
             f"LIMITS=({_words(train.limits)})",
             f"WARNS=({_words(train.warns)})",
             f"CLASSES=({_words([length_class(x) for x in train.limits])})",
             f"EVAL_LIMITS=({_words(evals.limits)})",
             f"EVAL_WARNS=({_words(evals.warns)})",
             "EVAL_CLASSES=(" + _words([length_class(x) if x else "-"
                                        for x in evals.limits]) + ")"]
    return "\n".join(lines) + BODY.replace("DEFAULT_MAX", str(DEFAULT_MAX_ARRAY_SIZE))

"""The bash of one SLURM array task: one run (or a training run's evaluations, in turn) with
the executor's rules.

The task checks that the run table (`slurm_table.py`) is the one its script was exported
with, reads its run's line, takes the run's lock beside its checkpoints, reads the run's
done record only once the lock is held (a run that finished while the lock was slow to
come is not run again), checks the manifest, resumes from the latest checkpoint, retries
up to the run's limit, writes one log per run, and on success the done record `run` reads
too. Nothing is written through a link: each path is checked with `-L` (lstat) first, new
files are made exclusively (mktemp, noclobber) and renamed into place with `mv -T`, which
replaces a link and never follows it.

Stops. The time-limit warning (USR1, sent to this batch shell by `--signal=B:USR1@W`
W seconds before the limit) and a TERM sent to this batch shell alone
(`scancel --batch --signal=TERM`) give the run GRACE seconds (W less a margin kept for
the requeue) to write its checkpoint before it is killed. A plain `scancel` is not such a
stop: SLURM sends TERM to every process of the job at once and kills them all after the
cluster's KillWait (30 s by default), whatever this script does; a run that needs longer
to checkpoint loses that checkpoint, and its trace may have no exit. Processes of a run
that ended on its own get `CAMPAIGN_LINGER_S` (60 s).

Beside the done record the task keeps the run's trace, `<run id>.attempts.jsonl`: each
attempt's start and exit and a few of the steps the run reported (its first, the newest,
and the newest no later than its latest checkpoint), one journal event a line, so that
`status` and `replan` read a SLURM run the way they read a journal (`slurm_trace.py`). A
sampler beside the run reads the progress file every `CAMPAIGN_PROGRESS_EVERY_S` (60 s).
"""

from __future__ import annotations

FUNCTIONS = r"""
say() { printf '%s  %s\n' "$(date '+%F %T')" "$*"; }
# The array's offset in the table, and the seconds from its warning to its time limit.
OFFSET="${1:-0}"
[[ "$OFFSET" =~ ^[0-9]{1,7}$ ]] || { say "expected an array offset, got '$OFFSET'"; exit 2; }
WARN="${2:-$WARN_DEFAULT}"
[[ "$WARN" =~ ^[1-9][0-9]{0,6}$ ]] || { say "expected a warning in seconds, not '$WARN'"; exit 2; }
RUNDIR="$WORKDIR/campaign-run"
linked() {
  local p
  for p; do
    if [[ -L "$p" ]]; then
      say "refused: $p is a symbolic link; nothing is written through a link (remove it)"
      return 0
    fi
  done
  return 1
}
folders() {
  local p
  for p; do
    linked "$p" && return 1
    [[ -d "$p" ]] || mkdir -- "$p" 2>/dev/null || [[ -d "$p" ]] \
      || { say "cannot make $p"; return 1; }
    linked "$p" && return 1
  done
  return 0
}
put() {  # put FILE: standard input into FILE, atomically, never through a link
  local tmp
  tmp=$(mktemp "${1%/*}/.${1##*/}.XXXXXX") || return 1
  if cat >"$tmp" && chmod 644 "$tmp" && mv -fT -- "$tmp" "$1"; then return 0; fi
  rm -f -- "$tmp"; return 1
}
is_done() {  # is_done RECORD FINGERPRINT ("": any)
  local want="\"fingerprint\":\"$2"; [[ -n "$2" ]] && want+='"'
  [[ -f "$1" && ! -L "$1" ]] && grep -qF -- "$want" "$1"
}
# An earlier export's marker (campaign-run/done/RUN_ID, no parameters in it) counts when
# the run's manifest beside RECORD records FINGERPRINT (planner.run.once says why).
legacy_done() {  # legacy_done RUN_ID RECORD FINGERPRINT
  local marker="$RUNDIR/done/$1" manifest="${2%.done}.manifest.toml"
  [[ -n "$3" && -f "$marker" && ! -L "$marker" && -f "$manifest" && ! -L "$manifest" ]] \
    && grep -qxF -- "fingerprint = \"$3\"" "$manifest"
}
finished() { is_done "$2" "$3" || legacy_done "$1" "$2" "$3"; }  # finished RUN_ID RECORD FP
fresh() { [[ -e "$1" || -L "$1" ]] || (set -C; : >"$1") 2>/dev/null; ! linked "$1"; }

# The run's trace: journal events, one a line, rewritten whole (atomically) each time.
now() {
  local t="${EPOCHREALTIME:-}"; t="${t/,/.}"
  [[ "$t" =~ ^[0-9]+\.[0-9]+$ ]] || t=$(date +%s.%N)
  printf '%s' "$t"
}
ns() { local f="${1#*.}000000000"; printf '%s' "${1%%.*}${f:0:9}"; }  # a time, in ns
EVERY="${CAMPAIGN_PROGRESS_EVERY_S:-60}"
[[ "$EVERY" =~ ^[0-9]{1,6}(\.[0-9]{1,3})?$ && ! "$EVERY" =~ ^0*(\.0*)?$ ]] || EVERY=60
TRACE_KEEP=60  # lines of earlier attempts kept: ten attempts and more
trace_add() {  # trace_add LINE: the trace's newest lines, then LINE
  local old=""
  [[ -f "$TRACE" && ! -L "$TRACE" ]] && old=$(tail -n "$TRACE_KEEP" -- "$TRACE")
  { [[ -n "$old" ]] && printf '%s\n' "$old"; printf '%s\n' "$1"; } | put "$TRACE"
}
last_attempt() {  # the trace's newest attempt number (0: none)
  local n=""
  [[ -f "$TRACE" && ! -L "$TRACE" ]] && n=$(sed -n \
    's/.*"ev":"started","attempt":\([0-9]\{1,9\}\),.*/\1/p' -- "$TRACE" | tail -n 1)
  printf '%s' "${n:-0}"
}
progress_step() {  # STEP: the step the progress file reports, read as `run` reads it
  local raw
  [[ -f "$CAMPAIGN_PROGRESS" && ! -L "$CAMPAIGN_PROGRESS" ]] || return 1
  raw=$(head -c 4097 -- "$CAMPAIGN_PROGRESS" 2>/dev/null) || return 1
  (( ${#raw} <= 4096 )) || return 1
  local sp='[[:space:]]*'
  [[ "$raw" =~ ^$sp\{(.*,)?$sp\"step\"$sp:$sp(0|[1-9][0-9]{0,11})$sp[,}] ]] || return 1
  STEP="${BASH_REMATCH[2]}"
}
checkpoint_mtime() {  # MT: when the resume path last changed (lstat, as `run` looks)
  [[ "$KIND" == train && ( -e "$RESUME" || -L "$RESUME" ) ]] || return 1
  MT=$(stat -c %.9Y -- "$RESUME" 2>/dev/null) && [[ "$MT" =~ ^[0-9]+\.[0-9]+$ ]]
}
sampler() {  # beside an attempt: its first, newest and checkpointed steps, into the trace
  local base first="" first_t=0 last="" last_t=0 at_ck="" ck="" seen="" seen_mt="" quit=""
  local t line changed nap
  base=$(tail -n "$TRACE_KEEP" -- "$TRACE" 2>/dev/null)
  trap 'quit=1' TERM
  trap '' INT USR1
  while :; do
    changed=""
    t=$(now)
    # The checkpoint first: a sample taken before it was written is a step it holds.
    if checkpoint_mtime && [[ "$MT" != "$seen_mt" ]]; then
      seen_mt="$MT"; changed=1
      ck=$(printf '{"t":%s,"ev":"checkpointed","attempt":%s,"run":"%s","mtime":%s}' \
        "$t" "$TA" "$RUN_ID" "$MT")
      if [[ -n "$last" ]] && (( last_t <= $(ns "$MT") )); then at_ck="$last"
      elif [[ -n "$first" ]] && (( first_t <= $(ns "$MT") )); then at_ck="$first"
      else at_ck=""; fi
    fi
    if progress_step && [[ "$STEP" != "$seen" ]]; then
      seen="$STEP"; changed=1
      line=$(printf '{"t":%s,"ev":"progress","attempt":%s,"run":"%s","step":%s}' \
        "$t" "$TA" "$RUN_ID" "$STEP")
      if [[ -z "$first" ]]; then first="$line"; first_t=$(ns "$t")
      else last="$line"; last_t=$(ns "$t"); fi
    fi
    if [[ -n "$changed" ]]; then
      { [[ -n "$base" ]] && printf '%s\n' "$base"; printf '%s\n' "$first"
        [[ -n "$at_ck" && "$at_ck" != "$first" && "$at_ck" != "$last" ]] \
          && printf '%s\n' "$at_ck"
        [[ -n "$last" ]] && printf '%s\n' "$last"
        [[ -n "$ck" ]] && printf '%s\n' "$ck"
      } | grep -v '^$' | put "$TRACE"
    fi
    [[ -z "$quit" ]] && kill -0 "$child" 2>/dev/null || return 0
    sleep "$EVERY" & nap=$!
    wait "$nap" 2>/dev/null
    kill "$nap" 2>/dev/null
  done
}

# Runs named for W&B, MLflow and TensorBoard (planner/run/tracking.py says why these),
# each variable only where the submitting user's environment does not set it: that is
# read once, before any run of this task sets one.
USER_TRACKING=" "
for v in WANDB_RUN_GROUP WANDB_NAME WANDB_RUN_ID WANDB_RESUME MLFLOW_EXPERIMENT_NAME \
    MLFLOW_TAGS TENSORBOARD_LOGGING_DIR; do
  [[ -v "$v" ]] && USER_TRACKING+="$v "
done
track() { [[ "$USER_TRACKING" == *" $1 "* ]] || export "$1=$2"; }
tracking() {
  [[ "${TRACKING:-1}" == 1 && "$KIND" != embed ]] || return 0
  track WANDB_RUN_GROUP "$CAMPAIGN_ID"; track WANDB_NAME "$RUN_ID"
  track WANDB_RUN_ID "$RUN_ID"; track WANDB_RESUME allow
  track MLFLOW_EXPERIMENT_NAME "$CAMPAIGN_ID"
  track MLFLOW_TAGS "{\"mlflow.runName\": \"$RUN_ID\"}"
  track TENSORBOARD_LOGGING_DIR "$CKPT/tensorboard/$RUN_ID"
}

LINGER="${CAMPAIGN_LINGER_S:-60}"; [[ "$LINGER" =~ ^[0-9]{1,6}$ ]] || LINGER=60
MARGIN=$((WARN / 10)); (( MARGIN > 15 )) && MARGIN=15
GRACE=$((WARN - MARGIN))
child=""; stop=""; deadline=0
ISOLATE=""; command -v setsid >/dev/null && ISOLATE=setsid
# The run's whole process group, or just its shell where setsid is missing.
group() { if [[ -n "$ISOLATE" ]]; then kill "$1" -- "-$child"; else kill "$1" "$child"; fi; }
# `exec` runs a program file, never a builtin or a function of this script, and `--` keeps
# a first word that starts with `-` from being read as an option.
start() { if [[ -n "$ISOLATE" ]]; then exec setsid -- "$@"; else exec -- "$@"; fi; }
on_stop() {
  stop="$1"; deadline=$((SECONDS + GRACE))
  if [[ -n "$child" ]]; then
    say "$RUN_ID: stopping ($1); it has ${GRACE}s to write its checkpoint, unless SLURM" \
        "ends the job first (a plain scancel: after its KillWait)"
    group -TERM 2>/dev/null
  fi
}
# TERM to this shell (scancel --batch --signal=TERM): stop, with the grace. The time-limit
# warning (--signal=B:USR1) stops the run and requeues this task, which resumes from the
# latest checkpoint in a fresh allocation.
trap 'on_stop cancel' TERM INT
trap 'on_stop requeue' USR1
JOB="${SLURM_ARRAY_JOB_ID:-${SLURM_JOB_ID:-?}}"

write_done() {  # write_done SLOT: the done record, into the space reserved before the run
  local text
  text=$(printf '{"run":"%s","fingerprint":"%s","finished":%s,"by":"slurm job %s on %s"}' \
    "$RUN_ID" "$FP" "$(date +%s)" "${JOB}_${SLURM_ARRAY_TASK_ID:-?}" "$(hostname)")
  if [[ -n "$1" ]] && ! linked "$1" && printf '%s' "$text" 1<>"$1" \
      && mv -fT -- "$1" "$DONE"; then
    return 0
  fi
  printf '%s\n' "$text" | put "$DONE"
}

run_one() {
  # The run's fields and argument vector, word for word: started as it is, never read
  # by a shell.
  row "$1" || return 2
  LOG="$RUNDIR/logs/$RUN_ID.log"; TRIES="$RUNDIR/slurm/$RUN_ID.tries"
  DONE="$CKPT/$RUN_ID.done"; LOCK="$CKPT/$RUN_ID.lock"; TRACE="$CKPT/$RUN_ID.attempts.jsonl"
  folders "$RUNDIR" "$RUNDIR/logs" "$RUNDIR/slurm" || return 2
  mkdir -p -- "${CKPT%/*}" "${EXPORT%/*}" || return 2
  folders "$CKPT" || return 2
  if finished "$RUN_ID" "$DONE" "$FP"; then
    say "$RUN_ID finished before: not run again"; return 0
  fi
  if [[ -n "$DEPENDS" ]] && ! finished "$DEPENDS" "$DEPENDS_DONE" "$DEPENDS_FP"; then
    say "$RUN_ID evaluates $DEPENDS, which has not finished: not run"; return 3
  fi
  # The run's lock beside its checkpoints, the same one `campaign-planner run` takes: no
  # two tasks or executors ever run one run at once. This script holds it; the run does not.
  command -v flock >/dev/null || { say "flock (util-linux) is needed to lock $RUN_ID"; return 2; }
  fresh "$LOCK" || return 2
  exec 9<"$LOCK" || return 2
  # A second, not none: `status` probes a running task's lock for an instant.
  if ! flock -w 1 9; then
    exec 9<&-
    say "$RUN_ID is running elsewhere (its lock $LOCK is held): not run"; return 3
  fi
  # Read again with the lock held: a run that finished while this task waited for the
  # lock (a second submission, a slow shared filesystem) is found here, not run again.
  if finished "$RUN_ID" "$DONE" "$FP"; then
    exec 9<&-; say "$RUN_ID finished before: not run again"; return 0
  fi
  local code=0
  run_locked || code=$?
  exec 9<&-
  return "$code"
}

run_locked() {
  MANIFEST="$CKPT/$RUN_ID.manifest.toml"
  linked "$MANIFEST" "$TRIES" "$DONE" "$TRACE" && return 2
  if [[ -e "$MANIFEST" ]]; then
    if ! grep -qxF "fingerprint = \"$FP\"" "$MANIFEST"; then
      say "refused: the checkpoints of $RUN_ID in $CKPT were made with other parameters" \
          "(see $MANIFEST); restore the plan, or move that folder away to start afresh"
      return 2
    fi
  elif [[ "$KIND" == train && -e "$RESUME" ]]; then
    say "refused: $RESUME exists without $MANIFEST; move $CKPT away to start afresh"; return 2
  else
    put "$MANIFEST" <"$MANIFESTS/$RUN_ID.manifest.toml" || return 2
  fi
  fresh "$LOG" || return 2
  exec 8>>"$LOG" || return 2
  export CAMPAIGN_ID CAMPAIGN_PLAN WORKDIR
  export CAMPAIGN_WORKDIR="$WORKDIR" CAMPAIGN_RUN_ID="$RUN_ID" CAMPAIGN_RUN_KIND="$KIND"
  export CAMPAIGN_SEED="$SEED" CAMPAIGN_CHECKPOINT_DIR="$CKPT"
  export CAMPAIGN_RESUME_PATH="$RESUME" CAMPAIGN_EXPORT="$EXPORT"
  export CAMPAIGN_PROGRESS="$CKPT/$RUN_ID.progress.json"
  tracking
  # Failures (time limits included) so far in this job: requeues keep the count, so a run
  # that never finishes is not requeued forever; a new submission starts afresh.
  local failures="${SLURM_RESTART_COUNT:-0}" attempt=0 code slot job count sampling outcome
  # Attempts are counted across requeues and submissions in the trace, as in a journal.
  TA=$(last_attempt)
  if [[ -r "$TRIES" ]] && read -r job count <"$TRIES" && [[ "$job" == "$JOB" ]]; then
    failures="$count"
  fi
  while :; do
    attempt=$((attempt + 1)); export CAMPAIGN_ATTEMPT="$attempt"
    if [[ -e "$RESUME" ]]; then CAMPAIGN_RESUME="$RESUME"; else CAMPAIGN_RESUME=""; fi
    export CAMPAIGN_RESUME
    say "=== $RUN_ID attempt $attempt (job ${SLURM_JOB_ID:-?}, restart" \
        "${SLURM_RESTART_COUNT:-0}) on $(hostname)," \
        "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-}; resume: ${CAMPAIGN_RESUME:-none}" >&8
    # Room for the done record, taken while there is room.
    slot=$(mktemp "$CKPT/.$RUN_ID.done.XXXXXX") && printf '%1024s' '' >"$slot" || slot=""
    # In a session of its own, the run gets only the TERM this script forwards, never the
    # batch shell's USR1 warning, and none of its processes can slip out of the stop.
    TA=$((TA + 1))
    # An earlier attempt's step no longer speaks for this one (`run` removes it too).
    rm -f -- "$CAMPAIGN_PROGRESS"
    trace_add "$(printf '{"t":%s,"ev":"started","attempt":%s,"run":"%s","cards":[],%s' \
      "$(now)" "$TA" "$RUN_ID" "$(printf '"fingerprint":"%s","resume":"%s","by":"slurm job %s"}' \
      "$FP" "${CAMPAIGN_RESUME:+checkpoint}" "$JOB")")"
    ( start "${ARGV[@]}" ) >&8 2>&8 8>&- 9>&- &
    child=$!
    sampler </dev/null >/dev/null 2>&1 8>&- 9>&- &
    sampling=$!
    # `wait` returns early (128 + the signal) when a trap runs; after a stop, the run has
    # until the deadline to end, then it is killed.
    [[ -n "$stop" ]] && group -TERM 2>/dev/null  # stopped before it began
    while kill -0 "$child" 2>/dev/null; do
      if [[ -z "$stop" ]]; then wait "$child"; continue; fi
      (( SECONDS < deadline )) || group -KILL 2>/dev/null
      sleep 1
    done
    wait "$child"; code=$?
    # The sampler takes a last sample and ends before anything else writes the trace.
    kill -TERM "$sampling" 2>/dev/null
    while kill -0 "$sampling" 2>/dev/null; do wait "$sampling"; done
    # A process of the run may outlive its shell (writing a last checkpoint on TERM): it
    # gets the rest of the stop's grace, or a minute, then nothing of this attempt runs
    # beside the next one.
    [[ -n "$stop" ]] || deadline=$((SECONDS + LINGER))
    while group -0 2>/dev/null && (( SECONDS < deadline )); do sleep 1; done
    group -KILL 2>/dev/null
    child=""
    say "$RUN_ID attempt $attempt exited with code $code" >&8
    if [[ -z "$stop" && $code -eq 0 ]]; then outcome=finished
    elif [[ "$stop" == cancel ]]; then outcome=interrupted
    elif (( failures + 1 > RETRIES )); then outcome=failed
    else outcome=retry; fi
    trace_add "$(printf '{"t":%s,"ev":"exited","attempt":%s,"run":"%s","code":%s,"outcome":"%s"}' \
      "$(now)" "$TA" "$RUN_ID" "$code" "$outcome")"
    # The stop flag first: a run that saves and exits 0 on TERM has not finished.
    if [[ -z "$stop" && $code -eq 0 ]]; then
      write_done "$slot"; say "$RUN_ID finished"; exec 8>&-; return 0
    fi
    [[ -n "$slot" ]] && rm -f -- "$slot"
    if [[ "$stop" == cancel ]]; then
      say "$RUN_ID cancelled: not finished"; exec 8>&-; return 143
    fi
    failures=$((failures + 1))
    printf '%s %s\n' "$JOB" "$failures" | put "$TRIES"
    if (( failures > RETRIES )); then
      say "$RUN_ID failed $failures time(s) (time limits included): no retries left; log: $LOG"
      exec 8>&-; return 1
    fi
    if [[ "$stop" == requeue ]]; then
      say "$RUN_ID stopped at the time limit: requeued to resume" \
          "($((RETRIES + 1 - failures)) tr(ies) left)"
      scontrol requeue "${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}"; exec 8>&-; return 75
    fi
    say "$RUN_ID exited with code $code: retrying ($((RETRIES + 1 - failures)) left)"
  done
}

"""

TRAIN_MAIN = r"""
TASK=$((OFFSET + ${SLURM_ARRAY_TASK_ID:?submit this script with submit.sh beside it}))
check_table || exit 2
cd "$WORKDIR" || exit 2
(( TASK < MAIN_RUNS )) || { say "no run $TASK in this campaign"; exit 2; }
run_one "$TASK"; exit $?
"""

EVAL_MAIN = r"""
TASK=$((OFFSET + ${SLURM_ARRAY_TASK_ID:?submit this script with submit.sh beside it}))
check_table || exit 2
cd "$WORKDIR" || exit 2
# This task's evaluations are those of training run TASK, one after the other.
(( TASK < MAIN_RUNS )) || { say "no training run $TASK in this campaign"; exit 2; }
row "$TASK" || exit 2
rc=0
for j in $EVALS; do
  code=0; run_one "$j" || code=$?
  case "$code" in 0) ;; 75|143) exit "$code" ;; *) rc=$code ;; esac
done
exit "$rc"
"""

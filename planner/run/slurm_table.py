r"""The run table of a SLURM export: every run a task may run, one line each, in one file
beside the sbatch scripts that every array task reads, so a script stays the same size
whatever the plan's.

A line is the run's fields and then its argument vector, word for word, separated by the
unit separator (0x1f) and ended by `.`. Inside a field a backslash is written `\\` and
every control character as `\xHH`, which bash's `printf %b` turns back into the byte: no
field is ever read by a shell or run as code. The first line names the campaign and the
fields; the scripts carry the table's SHA-256, and a task whose table differs (another
export, a cut copy) refuses to run.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from planner.planfile.plan import Run
from planner.run.once import done_path
from planner.run.params import run_fingerprint

NAME = "runs.table"
"""The table's file name, in the export folder."""
SEP = "\x1f"
FIELDS = ("id", "kind", "seed", "checkpoint_dir", "resume", "export", "fingerprint",
          "depends_on", "depends_done", "depends_fingerprint", "max_retries", "evaluations")
"""The fields of a line, in order, before the argument vector."""
_ESCAPE = {**{c: f"\\x{c:02x}" for c in [*range(0x20), 0x7f]}, ord("\\"): "\\\\"}


def cell(text: str) -> str:
    """`text` with no separator, line break or control character left in it."""
    return text.translate(_ESCAPE)


def _parent_done(by_id: dict[str, Run], run: Run, workdir: Path) -> tuple[str, str]:
    """Where the done record of the run `run` evaluates is, and its fingerprint ("" when
    that run is not in this plan: any record of it will do)."""
    if not run.depends_on:
        return "", ""
    parent = by_id.get(run.depends_on)
    if parent is None:  # an evaluation shares the folder of the run it evaluates
        return str(workdir / run.checkpoint_dir / f"{run.depends_on}.done"), ""
    return str(done_path(workdir, parent)), run_fingerprint(parent)


def table_text(campaign_id: str, rows: list[Run], evals_of: list[list[int]],
               every: list[Run], workdir: Path) -> str:
    """The table of `rows` (training runs first, then their evaluations); `evals_of[i]`:
    the rows evaluating row i; `every`: the plan's runs, to find evaluated runs. Paths
    are joined as `run` joins them: an absolute root arrives exactly as it is."""
    by_id = {r.id: r for r in every}
    lines = [f"# campaign-planner run table of {cell(campaign_id)}: {len(rows)} runs; "
             f"fields {' '.join(FIELDS)} argv... ."]
    for i, r in enumerate(rows):
        done, fp = _parent_done(by_id, r, workdir)
        fields = [r.id, r.kind, "" if r.seed is None else str(r.seed),
                  str(workdir / r.checkpoint_dir), str(workdir / r.resume),
                  str(workdir / r.export_name), run_fingerprint(r), r.depends_on, done, fp,
                  str(r.max_retries),
                  " ".join(map(str, evals_of[i])) if i < len(evals_of) else "",
                  *r.argv, "."]
        lines.append(SEP.join(cell(f) for f in fields))
    return "\n".join(lines) + "\n"


def digest(text: str) -> str:
    """The table's SHA-256, as `sha256sum` prints it."""
    return hashlib.sha256(text.encode()).hexdigest()


# The task's side: row N into the run's variables. `mapfile -s` skips to the line without
# a subshell; `printf -v … %b` decodes each field, and never runs one.
READ = r"""
row() {  # row N: the table's run N into RUN_ID, KIND, … and ARGV
  local f n
  local -a F line
  mapfile -t -s "$(($1 + 1))" -n 1 line <"$TABLE" || return 1
  IFS=$'\x1f' read -r -a F <<<"${line[0]:-}"
  n=${#F[@]}
  if (( n < NFIELDS + 1 )) || [[ "${F[n - 1]}" != . ]]; then
    say "the run table $TABLE has no whole line for run $1"; return 1
  fi
  DEC=()
  for f in "${F[@]:0:n-1}"; do printf -v f '%b' "$f"; DEC+=("$f"); done
  RUN_ID="${DEC[0]}"; KIND="${DEC[1]}"; SEED="${DEC[2]}"; CKPT="${DEC[3]}"
  RESUME="${DEC[4]}"; EXPORT="${DEC[5]}"; FP="${DEC[6]}"; DEPENDS="${DEC[7]}"
  DEPENDS_DONE="${DEC[8]}"; DEPENDS_FP="${DEC[9]}"; RETRIES="${DEC[10]}"; EVALS="${DEC[11]}"
  ARGV=("${DEC[@]:NFIELDS}")
}
check_table() {  # the table is the one this script was exported with, and not a link
  local sum
  if [[ -L "$TABLE" || ! -f "$TABLE" ]]; then
    say "the run table $TABLE is missing (or a link): copy the export with the plan"; return 1
  fi
  sum=$(sha256sum <"$TABLE") || { say "cannot read the run table $TABLE"; return 1; }
  if [[ "${sum%% *}" != "$TABLE_SHA256" ]]; then
    say "the run table $TABLE is not the one this script was exported with (another" \
        "export, or a cut copy): export again, or copy the whole export folder"
    return 1
  fi
}
"""

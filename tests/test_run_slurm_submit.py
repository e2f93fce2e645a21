"""submit.sh against stand-in sbatch and scontrol on PATH: arrays split to fit
MaxArraySize, one evaluation array per training array with a per-task dependency, the
throttle on every array, --test-only end to end, and roots exactly as `run` passes them.
The last test submits to a real controller when one answers."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.run_fixtures import harness as h

# Records each call as JSON; answers --parsable with a job id (a counter), and
# --test-only the way sbatch does, on stderr only.
SBATCH = r"""#!/bin/bash
n=$(( $(cat "$CALLS.n" 2>/dev/null || echo 100) + 1 )); echo "$n" > "$CALLS.n"
python3 -c 'import json, sys; print(json.dumps(sys.argv[1:]))' "$@" >> "$CALLS"
for a in "$@"; do
  if [[ "$a" == --test-only ]]; then
    echo "sbatch: Job $n to start at 2026-01-01T00:00:00 using 8 processors" >&2; exit 0
  fi
done
for a in "$@"; do [[ "$a" == --parsable ]] && echo "$n;cluster"; done
exit 0
"""


def _bin(tmp_path: Path, max_array: int | None) -> dict[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "sbatch").write_text(SBATCH)
    config = (f'echo "MaxArraySize            = {max_array}"' if max_array is not None
              else "exit 1")  # no controller answers
    (bin_dir / "scontrol").write_text(f"#!/bin/bash\n{config}\n")
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    return {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "CALLS": str(tmp_path / "calls.jsonl")}


def _calls(tmp_path: Path) -> list[list[str]]:
    return [json.loads(x) for x in (tmp_path / "calls.jsonl").read_text().splitlines()]


def _option(call: list[str], name: str) -> str | None:
    return next((a.split("=", 1)[1] for a in call if a.startswith(f"{name}=")), None)


def _script(call: list[str]) -> tuple[str, str]:
    """The script a call submits, and the offset it gives it (the warning comes last)."""
    return call[-3], call[-2]


def _submit(out: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(out / "submit.sh"), *args], env=env,
                          capture_output=True, text=True, timeout=300)


def _plan(seeds: int) -> dict[str, object]:
    return h.preset(seeds=tuple(range(seeds)), robustness=["baseline", "lr2"])


def test_arrays_are_split_to_fit_max_array_size(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, _plan(4), "--throttle", "2")
    plan = h.load(plan_path)
    train = [r for r in plan.runs if not r.depends_on]
    assert len(train) == 8
    proc = _submit(out, _bin(tmp_path, 3))
    assert proc.returncode == 0, proc.stderr
    calls = _calls(tmp_path)
    mains = [c for c in calls if _script(c)[0] == "campaign.sbatch"]
    evals = [c for c in calls if _script(c)[0] == "robustness.sbatch"]
    # 8 runs, at most 3 per array: 0-2, 3-5, 6-7, each told its offset.
    assert [(_option(c, "--array"), _script(c)[1]) for c in mains] == [
        ("0-2%2", "0"), ("0-2%2", "3"), ("0-1%2", "6")]
    # One evaluation array per training array; each task after its own run's task.
    assert len(evals) == len(mains)
    jobs = [str(101 + 2 * k) for k in range(len(mains))]
    for k, c in enumerate(evals):
        assert _option(c, "--dependency") == f"aftercorr:{jobs[k]}"
        assert _script(c)[1] == _script(mains[k])[1] and _option(c, "--array").endswith("%2")
    assert "--kill-on-invalid-dep=yes" in evals[0]
    # Every index below MaxArraySize, every training run in exactly one array.
    covered = []
    for c in mains:
        lo, hi = (int(x) for x in _option(c, "--array").split("%")[0].split("-"))
        assert hi < 3
        covered += [int(_script(c)[1]) + i for i in range(lo, hi + 1)]
    assert covered == list(range(8))
    assert "submitted campaign.sbatch: 2 of runs 6-7, --time=0-00:10:00, as job 105" \
        in proc.stdout


def test_1002_runs_without_a_controller_go_in_arrays_of_1001(tmp_path: Path) -> None:
    data = h.preset(seeds=tuple(range(501)), robustness=[], cards=8)
    data["campaign"]["window_days"] = 30  # type: ignore[index]
    plan_path, out = h.slurm_export(tmp_path, data)
    runs = h.load(plan_path).runs
    assert len(runs) == 1002
    assert _submit(out, _bin(tmp_path, None)).returncode == 0  # scontrol does not answer
    mains = [c for c in _calls(tmp_path) if _script(c)[0] == "campaign.sbatch"]
    assert [(_option(c, "--array"), _script(c)[1]) for c in mains] == [("0-1000%8", "0"),
                                                                       ("0%8", "1001")]
    # Task 0 of the second array, given its offset, is the 1,002nd run.
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "9",
           "SLURM_ARRAY_JOB_ID": "9"}
    task = subprocess.run(["bash", str(out / "campaign.sbatch"), "1001"], env=env,
                          capture_output=True, text=True, timeout=300)
    assert task.returncode == 0, task.stdout + task.stderr
    assert h.done_record(plan_path.parent, runs[1001]).exists()
    assert not h.done_record(plan_path.parent, runs[0]).exists()


def test_test_only_checks_every_array_and_queues_nothing(tmp_path: Path) -> None:
    _, out = h.slurm_export(tmp_path, _plan(2))
    proc = _submit(out, _bin(tmp_path, 1001), "--test-only")
    assert proc.returncode == 0, proc.stderr
    calls = _calls(tmp_path)
    assert [_script(c)[0] for c in calls] == ["campaign.sbatch", "robustness.sbatch"]
    assert all("--test-only" in c and "--parsable" not in c for c in calls)
    assert all(_option(c, "--dependency") is None for c in calls)
    assert proc.stderr.count("to start at") == 2
    assert "job \n" not in proc.stdout and "nothing queued" in proc.stdout


def test_a_submission_without_a_job_id_stops_with_one_line(tmp_path: Path) -> None:
    _, out = h.slurm_export(tmp_path, _plan(1))
    env = _bin(tmp_path, 1001)
    (tmp_path / "bin" / "sbatch").write_text("#!/bin/bash\nexit 0\n")
    proc = _submit(out, env)
    assert proc.returncode == 1 and "no job id" in proc.stderr
    assert proc.stderr.count("\n") == 1


def test_absolute_roots_reach_the_task_as_run_passes_them(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={}, robustness=[],
                    command="env > {checkpoint_dir}/env.txt", shell=True)
    shared = tmp_path / "disk" / "ckpt"
    data["ablation"]["checkpoint_root"] = str(shared)  # type: ignore[index]
    data["ablation"]["export_root"] = str(tmp_path / "disk" / "out")  # type: ignore[index]
    plan_path, out = h.slurm_export(tmp_path, data)
    run = h.load(plan_path).runs[0]
    shared.joinpath(run.id).mkdir(parents=True)
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "5",
           "SLURM_ARRAY_JOB_ID": "5"}
    task = subprocess.run(["bash", str(out / "campaign.sbatch")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert task.returncode == 0, task.stdout + task.stderr
    seen = dict(line.split("=", 1) for line in
                (shared / run.id / "env.txt").read_text().splitlines() if "=" in line)
    assert seen["CAMPAIGN_CHECKPOINT_DIR"] == str(shared / run.id)
    assert seen["CAMPAIGN_EXPORT"] == str(tmp_path / "disk" / "out" / run.id)
    assert seen["CAMPAIGN_RESUME_PATH"] == str(Path(run.resume))
    assert "//" not in "".join(seen[k] for k in ("CAMPAIGN_CHECKPOINT_DIR",
                                                 "CAMPAIGN_EXPORT"))


@pytest.mark.skipif(shutil.which("sbatch") is None, reason="SLURM is not installed")
def test_a_real_controller_takes_split_arrays_and_test_only(tmp_path: Path) -> None:
    ping = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=20)
    if "UP" not in ping.stdout:
        pytest.skip("no SLURM controller answers here")
    _, out = h.slurm_export(tmp_path, _plan(2))
    submit = (out / "submit.sh").read_text()
    # Arrays of 3 on any cluster: the split itself is what is checked.
    small = submit.replace("[[ \"$max\" =~ ^[0-9]{1,9}$ ]] || max=1001", "max=3")
    assert small != submit
    (out / "submit.sh").write_text(small)
    proc = subprocess.run(["bash", str(out / "submit.sh"), "--test-only"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "Invalid job array" not in proc.stderr and "dependency" not in proc.stderr
    # 4 training runs in arrays of at most 3: two arrays, each with its evaluations' array.
    assert proc.stderr.count("to start at") == 4

"""The SLURM export at scale, without a controller: paths under `--workdir`, one run table
that every task reads, a 10,000-run export far under SLURM's 4 MiB script limit, arrays by
run length with their own `--time`, the default throttle and the `--export` list. Tasks run
as SLURM would run them (bash with SLURM_ARRAY_TASK_ID set), submit.sh against stand-in
sbatch and scontrol."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

from planner.run.slurm_options import EXPORT_DEFAULT, limit_seconds, slurm_time
from planner.run.slurm_table import NAME
from tests.run_fixtures import harness as h
from tests.test_run_slurm_submit import _bin, _calls, _option, _script, _submit

ENV_DUMP = "env > {checkpoint_dir}/env.txt"


def _env(**more: str) -> dict[str, str]:
    return {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "5",
            "SLURM_ARRAY_JOB_ID": "5", **more}


def _task(script: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(script), *args], env=_env(**env), capture_output=True,
                          text=True, timeout=120)


def _members(spec: str) -> set[int]:
    """The indices of an `--array` value such as 0-2,5%2."""
    out: set[int] = set()
    for part in spec.split("%")[0].split(","):
        lo, _, hi = part.partition("-")
        out |= set(range(int(lo), int(hi or lo) + 1))
    return out


def _seen(path: Path) -> dict[str, str]:
    return dict(line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)


def test_with_workdir_the_tasks_read_everything_under_it(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={}, robustness=[], command=ENV_DUMP, shell=True)
    plan_path = h.make_plan(tmp_path / "p", data)
    shared = tmp_path / "shared" / "demo"
    out = plan_path.parent / "slurm"
    proc = h.cli("slurm", str(plan_path), "--out", str(out), "--workdir", str(shared))
    assert proc.returncode == 0, proc.stderr
    scripts = "".join((out / n).read_text() for n in ("campaign.sbatch", "submit.sh"))
    assert f"CAMPAIGN_PLAN={shared}/plan.toml" in scripts
    assert f"MANIFESTS={shared}/slurm/manifests" in scripts
    assert f"TABLE={shared}/slurm/{NAME}" in scripts
    # Nothing of the exporting host's folder is left for a node to look for.
    assert str(plan_path.parent) not in scripts + (out / NAME).read_text()
    # submit.sh where the plan has not been copied yet: one line, nothing submitted.
    early = _submit(out, _bin(tmp_path, 1001))
    assert early.returncode == 2 and early.stderr.count("\n") == 1
    assert f"the run table is not at {shared}/slurm/{NAME}" in early.stderr
    assert not (tmp_path / "calls.jsonl").exists()
    # The plan's folder copied to where the nodes see it, the original gone: the task runs.
    shutil.copytree(plan_path.parent, shared)
    shutil.rmtree(plan_path.parent)
    run = h.load(shared / "plan.toml").runs[0]
    task = _task(shared / "slurm" / "campaign.sbatch")
    assert task.returncode == 0, task.stdout + task.stderr
    seen = _seen(shared / run.checkpoint_dir / "env.txt")
    assert seen["CAMPAIGN_PLAN"] == str(shared / "plan.toml")
    assert seen["CAMPAIGN_CHECKPOINT_DIR"] == str(shared / run.checkpoint_dir)
    assert h.done_record(shared, run).exists()
    assert (shared / run.checkpoint_dir / f"{run.id}.manifest.toml").read_text() == \
        (shared / "slurm" / "manifests" / f"{run.id}.manifest.toml").read_text()


def test_10000_runs_share_one_table_and_small_scripts(tmp_path: Path) -> None:
    variants = {f"lr{i}": {"lr": f"0.{i}"} for i in range(2, 11)}
    data = h.preset(seeds=tuple(range(1000)), variants=variants, robustness=[], cards=8)
    data["campaign"]["window_days"] = 30  # type: ignore[index]
    plan_path, out = h.slurm_export(tmp_path, data)
    runs = h.load(plan_path).runs
    assert len(runs) == 10_000
    script = (out / "campaign.sbatch").stat().st_size
    # The script holds no run: its size does not grow with the plan (16,689 bytes here;
    # SLURM's default limit is 4 MiB). The table holds them all, one line each.
    assert script < 32 * 1024
    assert (out / NAME).read_text().count("\n") == 10_001
    assert not any(r.id in (out / "campaign.sbatch").read_text() for r in runs[:50])
    # The 10,000th run is task 990 of the tenth array of 1001.
    assert _submit(out, _bin(tmp_path, None), "--test-only").returncode == 0
    calls = _calls(tmp_path)
    assert [_script(c)[1] for c in calls] == [str(k * 1001) for k in range(10)]
    assert _option(calls[-1], "--array") == "0-990%8"
    task = _task(out / "campaign.sbatch", "9009", SLURM_ARRAY_TASK_ID="990")
    assert task.returncode == 0, task.stdout + task.stderr
    assert h.done_record(plan_path.parent, runs[9999]).exists()
    assert not h.done_record(plan_path.parent, runs[9998]).exists()


def test_a_table_that_is_not_the_exported_one_is_refused(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0, 1), variants={},
                                                       robustness=[]))
    table = out / NAME
    whole = table.read_text()
    table.write_text(whole[: whole.rindex("\n", 0, -1) + 1])  # cut at a run's line
    task = _task(out / "campaign.sbatch")
    assert task.returncode == 2 and "not the one this script was exported with" in task.stdout
    table.unlink()
    table.symlink_to(tmp_path / "elsewhere")
    task = _task(out / "campaign.sbatch")
    assert task.returncode == 2 and "is missing (or a link)" in task.stdout
    assert not (plan_path.parent / "campaign-run" / "logs").exists()


def test_every_character_of_a_field_survives_the_table(tmp_path: Path) -> None:
    from planner.run.slurm_table import READ, SEP, cell

    words = ["plain", "", "two words", "tab\there", "line\nbreak", "back\\slash \\x41 \\n",
             "unit\x1fsep", "$(touch pwned) `id` 'q' \"d\"", "ünï 🎉", "-n", ".", "\\"]
    fields = [f"f{i}" for i in range(12)]
    table = tmp_path / "t"
    table.write_text("# header\n" + SEP.join(cell(x) for x in [*fields, *words, "."]) + "\n")
    show = tmp_path / "show.py"
    show.write_text("import json, sys\nprint(json.dumps(sys.argv[1:]))\n")
    script = (f"say() {{ echo \"$*\"; }}\nTABLE={table}\nNFIELDS=12\n{READ}\n"
              f'row 0 || exit 9\ncd {tmp_path}\nexec python3 {show} "$EVALS" "${{ARGV[@]}}"\n')
    proc = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout) == ["f11", *words]
    assert not (tmp_path / "pwned").exists()


def test_runs_of_different_lengths_go_in_arrays_with_their_own_time(tmp_path: Path) -> None:
    data = h.preset(seeds=(0, 1, 2), variants={"slow": {"lr": "0.2"}}, robustness=["slow"])
    slow = data["ablation"]["variants"][0]  # type: ignore[index]
    slow["step_time_s"] = {"value": 200.0, "source": "entered"}
    plan_path, out = h.slurm_export(tmp_path, data)
    plan = h.load(plan_path)
    train = [r for r in plan.runs if not r.depends_on]
    assert _submit(out, _bin(tmp_path, 1001)).returncode == 0
    calls = _calls(tmp_path)
    mains = [c for c in calls if _script(c)[0] == "campaign.sbatch"]
    assert len(mains) == 2  # a short class and a long one
    times = {}
    for c in mains:
        slow_ones = {i for i, r in enumerate(train) if r.variant == "slow"}
        members = _members(_option(c, "--array"))
        assert members in (slow_ones, set(range(len(train))) - slow_ones)
        warn = c[-1]
        assert _option(c, "--signal") == f"B:USR1@{warn}"
        times["slow" if members == slow_ones else "fast"] = _option(c, "--time")
    # Each array's limit is its longest run's planned time plus 20 % (10 minutes at least).
    longest = {v: max(r.end_h - r.start_h for r in train if (r.variant == "slow") == (v == "slow"))
               for v in ("slow", "fast")}
    assert times == {v: slurm_time(limit_seconds(hours)) for v, hours in longest.items()}
    assert times["fast"] == "0-00:10:00" and times["slow"] > "0-01"
    # The evaluations of the slow runs: one array after each of their training arrays.
    evals = [c for c in calls if _script(c)[0] == "robustness.sbatch"]
    assert len(evals) == 1 and _option(evals[0], "--dependency") == "aftercorr:102"
    # --time given: every run in one array with that limit.
    shutil.rmtree(out)
    (tmp_path / "calls.jsonl").unlink()
    assert h.cli("slurm", str(plan_path), "--out", str(out), "--time", "3:00:00"
                 ).returncode == 0
    assert _submit(out, _bin(tmp_path, 1001)).returncode == 0
    mains = [c for c in _calls(tmp_path) if _script(c)[0] == "campaign.sbatch"]
    assert [(_option(c, "--array"), _option(c, "--time"), c[-1]) for c in mains] == [
        ("0-5%2", "0-03:00:00", "300")]


def test_the_throttle_comes_from_the_plans_cards(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0, 1), cards=3,
                                                       robustness=[]))
    assert _submit(out, _bin(tmp_path, 1001)).returncode == 0
    assert [_option(c, "--array") for c in _calls(tmp_path)] == ["0-3%3"]
    assert h.cli("slurm", str(plan_path), "--out", str(out), "--force", "--throttle",
                 "1").returncode == 0
    (tmp_path / "calls.jsonl").unlink()
    assert _submit(out, _bin(tmp_path, 1001)).returncode == 0
    assert [_option(c, "--array") for c in _calls(tmp_path)] == ["0-3%1"]


def test_the_tasks_get_a_stated_environment(tmp_path: Path) -> None:
    plan_path, out = h.slurm_export(tmp_path, h.preset(seeds=(0,), robustness=[]))
    script = (out / "campaign.sbatch").read_text()
    assert f"#SBATCH --export={','.join(EXPORT_DEFAULT)}\n" in script
    for value, line in [("+HF_TOKEN,WANDB_API_KEY,MY_SETTING",
                         ",".join([*EXPORT_DEFAULT, "HF_TOKEN", "MY_SETTING"])),
                        ("PATH,HOME", "PATH,HOME"), ("ALL", "ALL"), ("NONE", "NONE")]:
        proc = h.cli("slurm", str(plan_path), "--out", str(out), "--force", "--export", value)
        assert proc.returncode == 0, proc.stderr
        assert f"#SBATCH --export={line}\n" in (out / "campaign.sbatch").read_text()
    for bad in ["SECRET=hunter2", "A B", "", "+"]:
        proc = h.cli("slurm", str(plan_path), "--out", str(tmp_path / "x"), "--export", bad)
        assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
        assert "--export" in proc.stderr and not (tmp_path / "x").exists()
    assert "hunter2" not in proc.stderr


def test_cpu_and_memory_come_from_the_catalog(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={}, robustness=[])
    data["campaign"]["card"] = "l40s"  # type: ignore[index]
    _, out = h.slurm_export(tmp_path, data)
    script = (out / "campaign.sbatch").read_text()
    # AWS g6e.xlarge: one L40S, 4 vCPU, 32 GiB; a task asks for the CPUs and 3/4 of that.
    assert "#SBATCH --cpus-per-task=4\n" in script and "#SBATCH --mem=24G\n" in script
    help_text = " ".join(h.cli("slurm", "--help").stdout.split())
    assert "else 4)" in help_text and "else 12G)" in help_text

"""No factor value runs as code: each arrives as exactly one literal argument, the same in
plan.toml, in `run` and in the SLURM scripts; names that could carry code are refused."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import tomli_w

from planner.spec.templates import Args, launch_mode, render
from tests.run_fixtures import harness as h

DUMP = shlex.quote(str(Path(h.__file__).with_name("argv_dump.py")))
NASTY = {
    "subst": "$(touch MARKER)",
    "apostrophe": "it's a b",
    "backticks": "`touch MARKER`",
    "semicolon": "0.1; touch MARKER",
    "newline": "0.1\ntouch MARKER",
    "spaced": "0.1 --evil-flag",
    "quotes": "\"'\\\"$HOME",
}


def _preset(command: str) -> dict[str, object]:
    data = h.preset(seeds=(0,), robustness=[], cards=1,
                    variants={name: {"lr": v} for name, v in NASTY.items()})
    data["ablation"]["command"] = command  # type: ignore[index]
    return data


def _check_argv(plan_path: Path, wd: Path) -> None:
    plan = h.load(plan_path)
    assert not list(wd.parent.rglob("MARKER")) and not Path("MARKER").exists()
    for run in plan.runs:
        got = json.loads((wd / run.checkpoint_dir / "argv.json").read_text())
        value = NASTY.get(run.variant, "0.1")
        assert got == ["--lr", value, "--quoted", f"lr is {value}!",
                       f"lr={value}", "crash=never", "--id", run.id]


COMMAND = (f"{h.PY} {DUMP} {{checkpoint_dir}}/argv.json --lr {{factors[lr]}} "
           f"--quoted \"lr is {{factors[lr]}}!\" {{overrides}} --id {{run_id}}")


@pytest.mark.parametrize("command", [COMMAND, COMMAND + " && true"],
                         ids=["exec", "shell"])
def test_values_arrive_as_one_literal_argument_under_run(tmp_path: Path, command: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", _preset(command))
    proc = subprocess.run([sys.executable, "-m", "planner", "run", str(plan_path), "--poll",
                           "0.02"], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    _check_argv(plan_path, plan_path.parent)
    # plan.toml shows the command as it runs; quoted values do not call for a shell.
    for run in h.load(plan_path).runs:
        assert launch_mode(run.command)[0] == ("exec" if command == COMMAND else "shell")


def test_values_arrive_as_one_literal_argument_under_slurm(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "p", _preset(COMMAND))
    out = tmp_path / "slurm"
    assert h.cli("slurm", str(plan_path), "--out", str(out)).returncode == 0
    for i in range(len(h.load(plan_path).runs)):
        env = {**os.environ, "SLURM_ARRAY_TASK_ID": str(i), "SLURM_JOB_ID": "1",
               "SLURM_ARRAY_JOB_ID": "1"}
        task = subprocess.run(["bash", str(out / "campaign.sbatch")], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert task.returncode == 0, task.stdout + task.stderr
    _check_argv(plan_path, plan_path.parent)


@pytest.mark.parametrize("key", ["x$(touch MARKER)", "a b", "x;y", "`k`", "1abc", "k" * 65])
def test_a_factor_name_that_is_not_identifier_like_is_refused(tmp_path: Path,
                                                              key: str) -> None:
    data = h.preset(seeds=(0,), robustness=[], variants={"v": {key: "1"}})
    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(data))
    proc = h.cli("--preset", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "identifier-like" in proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


@pytest.mark.parametrize("template", ["run {seed[0]}", "run {seed:zz}", "run {seed!z}",
                                      "run {run_id.upper}", "run {variant[0]}",
                                      "run 'unbalanced {seed}", "run \\{seed}"])
def test_templates_that_cannot_be_filled_are_refused_when_the_preset_loads(
        tmp_path: Path, template: str) -> None:
    data = h.preset(seeds=(0,), robustness=[], command=template)
    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(data))
    proc = h.cli("--preset", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    assert "ablation.command" in proc.stderr and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()


def test_quoting_keeps_plain_values_readable_and_nasty_ones_literal() -> None:
    assert render("t --lr {v} {o}", {"v": "0.1", "o": Args(("a=1", "b=2"))}) == \
        "t --lr 0.1 a=1 b=2"
    for value in NASTY.values():
        for template, want in (("t {v}", value), ("t '{v}'", value),
                               ('t "x{v}y"', f"x{value}y"), ("t --k={v}", f"--k={value}")):
            cmd = render(template, {"v": value})
            shell = subprocess.run(["/bin/sh", "-c", f"printf '%s\\0' {cmd[2:]}"],
                                   capture_output=True, text=True, check=True)
            assert shell.stdout.split("\0")[:-1] == [want]  # one argument, the literal text
            mode, argv = launch_mode(cmd)
            if mode == "exec":  # split without a shell, it splits the same
                assert argv == ["t", want]

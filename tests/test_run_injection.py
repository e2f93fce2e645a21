"""No factor value runs as code: each arrives as exactly one literal argument, the same in
plan.toml, in `run` and in the SLURM scripts; a placeholder where a value could become
code is refused when the preset loads, in both modes; names that could carry code are
refused."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.run_fixtures import harness as h

DUMP = shlex.quote(str(Path(h.__file__).with_name("argv_dump.py")))
NASTY = {
    "subst": "$(touch MARKER)",
    "apostrophe": "it's a b",
    "backticks": "`touch MARKER`",
    "semicolon": "0.1; touch MARKER",
    "spaced": "0.1 --evil-flag",
    "quotes": "\"'\\\"$HOME",
    "closing": "'; touch MARKER; '",
    "dquote": "\"; touch MARKER; \"",
    "hash": "x # touch MARKER",
    "dash": "-c",
}


def _preset(command: str, shell: bool = False) -> dict[str, Any]:
    data = h.preset(seeds=(0,), robustness=[], cards=1,
                    variants={name: {"lr": v} for name, v in NASTY.items()})
    data["ablation"]["command"] = command
    if shell:
        data["ablation"]["shell"] = True
    return data


def _no_marker(root: Path) -> None:
    assert not list(root.rglob("MARKER")) and not Path("MARKER").exists()


def _check_argv(plan_path: Path, wd: Path, want: Any) -> None:
    plan = h.load(plan_path)
    _no_marker(wd.parent)
    for run in plan.runs:
        got = json.loads((wd / run.checkpoint_dir / "argv.json").read_text())
        assert got == want(NASTY.get(run.variant, "0.1"), run.id)


COMMAND = (f"{h.PY} {DUMP} {{checkpoint_dir}}/argv.json --lr {{factors[lr]}} "
           f"--quoted \"lr is {{factors[lr]}}!\" '{{factors[lr]}}' {{overrides}} "
           "--id {run_id}")


def _want(value: str, run_id: str) -> list[str]:
    return ["--lr", value, "--quoted", f"lr is {value}!", value, f"lr={value}",
            "crash=never", "--id", run_id]


# With a shell, values stand where plain words stand: bare, in one quote, and in the
# positional arguments of an inner `sh -c`, the way to hand a script a value.
SHELL_COMMAND = (f"mkdir -p {{checkpoint_dir}} && {COMMAND} | cat >/dev/null && "
                 "sh -c 'printf \"%s\" \"$1\" > \"$2\"' sh {factors[lr]} "
                 "{checkpoint_dir}/inner.txt # a comment")


def _run(plan_path: Path, cwd: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "planner", "run", str(plan_path), "--poll",
                           "0.02"], capture_output=True, text=True, timeout=120, cwd=cwd)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _slurm(plan_path: Path, tmp_path: Path) -> None:
    out = tmp_path / "slurm"
    assert h.cli("slurm", str(plan_path), "--out", str(out)).returncode == 0
    for i in range(len(h.load(plan_path).runs)):
        env = {**os.environ, "SLURM_ARRAY_TASK_ID": str(i), "SLURM_JOB_ID": "1",
               "SLURM_ARRAY_JOB_ID": "1"}
        task = subprocess.run(["bash", str(out / "campaign.sbatch")], env=env, cwd=tmp_path,
                              capture_output=True, text=True, timeout=300)
        assert task.returncode == 0, task.stdout + task.stderr


@pytest.mark.parametrize("launcher", ["run", "slurm"])
@pytest.mark.parametrize("shell", [False, True], ids=["argv", "shell"])
def test_values_arrive_as_one_literal_argument(tmp_path: Path, launcher: str,
                                               shell: bool) -> None:
    plan_path = h.make_plan(tmp_path / "p", _preset(SHELL_COMMAND if shell else COMMAND,
                                                    shell))
    plan = h.load(plan_path)
    for run in plan.runs:  # plan.toml records what runs
        assert run.shell is shell
        if not shell:
            assert run.argv[-len(_want("", "")):] == _want(NASTY.get(run.variant, "0.1"),
                                                           run.id)
            assert shlex.split(run.command) == run.argv
    if launcher == "run":
        _run(plan_path, tmp_path)
    else:
        _slurm(plan_path, tmp_path)
    _check_argv(plan_path, plan_path.parent, _want)
    if shell:
        for run in plan.runs:
            inner = plan_path.parent / run.checkpoint_dir / "inner.txt"
            assert inner.read_text() == NASTY.get(run.variant, "0.1")


# Every position where a value would be read as code, or where quoting cannot hold.
POSITIONS = {
    "comment": ("{overrides} # {factors[lr]}", "after `#`"),
    "heredoc": ("cat <<EOF\n{factors[lr]}\nEOF\n", "inside a heredoc"),
    "heredoc-quoted": ("cat <<'EOF'\nx {factors[lr]}\nEOF", "inside a heredoc"),
    "nested-quotes": ("echo \"$(echo \"{factors[lr]}\")\"", "inside $(...)"),
    "subst": ("echo $(echo {factors[lr]})", "inside $(...)"),
    "backticks": ("echo `echo {factors[lr]}`", "inside backquotes"),
    "param": ("echo \"${{X:-{factors[lr]}}}\"", "inside ${...}"),
    "sh-c": ("sh -c 'echo {factors[lr]}'", "after `-c`"),
    "bash-lc": ("bash -lc \"echo {factors[lr]}\"", "after `-lc`"),
    "python-c": ("python3 -c 'print(\"{factors[lr]}\")'", "after `-c`"),
    "eval": ("eval echo {factors[lr]}", "`eval`"),
    "trap": ("trap 'echo {factors[lr]}' EXIT", "`trap`"),
    "herestring": ("sh <<< {factors[lr]}", "here-string"),
    "arith": ("[[ {factors[lr]} -eq 1 ]]", "[[ ... ]]"),
    "dollar": ("echo ${factors[lr]}", "after `$`"),
    "backslash": ("echo \\{factors[lr]}", "backslash"),
}


@pytest.mark.parametrize("shell", [False, True], ids=["argv", "shell"])
@pytest.mark.parametrize("position", sorted(POSITIONS))
def test_a_placeholder_where_a_value_could_be_code_is_refused_at_load(
        tmp_path: Path, position: str, shell: bool) -> None:
    template, where = POSITIONS[position]
    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(_preset(template, shell)))
    proc = h.cli("--preset", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    err = proc.stderr
    assert "ablation.command" in err and err.count("\n") == 1 and "Traceback" not in err
    if shell or position in ("sh-c", "bash-lc", "python-c", "backslash"):
        assert where in err, err  # the position is named
    else:
        assert "needs a shell" in err, err  # without a shell, shell syntax is refused
    assert not (tmp_path / "out").exists()
    _no_marker(tmp_path)


@pytest.mark.parametrize("shell", [False, True], ids=["argv", "shell"])
@pytest.mark.parametrize("value", ["x\ntouch MARKER #", "x\rtouch MARKER", "x\0y"])
def test_a_value_with_a_line_break_or_nul_is_refused(tmp_path: Path, value: str,
                                                     shell: bool) -> None:
    data = _preset("echo {factors[lr]}", shell)
    data["ablation"]["variants"] = [{**data["ablation"]["variants"][0],
                                     "changes": {"lr": value}}]
    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(data))
    proc = h.cli("--preset", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2 and "line breaks" in proc.stderr, proc.stderr
    assert proc.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


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
                                      "run 'unbalanced {seed}", "run \\{seed}", "", "  ",
                                      "run } {seed}"])
def test_templates_that_cannot_be_filled_are_refused_when_the_preset_loads(
        tmp_path: Path, template: str) -> None:
    data = h.preset(seeds=(0,), robustness=[], command=template or "x")
    data["ablation"]["command"] = template
    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(data))
    proc = h.cli("--preset", str(src), "--out", str(tmp_path / "out"))
    assert proc.returncode == 2, proc.stderr
    assert "ablation.command" in proc.stderr and proc.stderr.count("\n") == 1
    assert "Traceback" not in proc.stderr and not (tmp_path / "out").exists()

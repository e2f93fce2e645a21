"""plan.toml is read back through the rules a preset meets (ids, names, numbers, paths,
the command) before anything runs or is exported: an edit that a preset could not carry
is one line naming the field, exit 2, nothing started and nothing written."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from planner.cli.main import main
from tests.run_fixtures import harness as h


def _edit(plan_path: Path, change: Any) -> None:
    data = h.plan_data(plan_path)
    change(data)
    h.write_plan_data(plan_path, data)


def _file(plan_path: Path, field: str) -> Path:
    """The file an error about `field` names: a run's field is in the runs file."""
    return plan_path.parent / "runs.jsonl" if field.startswith("runs") else plan_path


def _set(path: str, value: Any) -> Any:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = data
        for key in parents:
            node = node[int(key)] if key.isdigit() else node[key]
        node[int(last) if last.isdigit() else last] = value
    return change


EDITS = {
    "id-newline": ("campaign.id", "c\ntouch MARKER", "campaign.id"),
    "id-dollar": ("campaign.id", "c$(touch MARKER)", "campaign.id"),
    "name-space": ("campaign.name", "a b", "campaign.name"),
    "created": ("campaign.created", "yesterday", "campaign.created"),
    "fingerprint": ("campaign.fingerprint", "abc", "campaign.fingerprint"),
    "card": ("campaign.card", "a6000;x", "campaign.card"),
    "price": ("campaign.price_per_card_hour", 1e308, "campaign.price_per_card_hour"),
    "card-name-escape": ("campaign.card_name", "A\x1b[2J", "campaign.card_name"),
    "warning-newline": ("warnings", ["fine\nRuns 0 done"], "warnings[0]"),
    "variant": ("runs.0.variant", "v\nx", "runs[0].variant"),
    "factor": ("runs.0.factor", "lr;x", "runs[0].factor"),
    "seed-huge": ("runs.0.seed", 2**63, "runs[0].seed"),
    "micro-batch": ("runs.0.micro_batch", -1, "runs[0].micro_batch"),
    "card-index": ("runs.0.card", [7], "runs[0].card"),
    "depends": ("runs.0.depends_on", "nowhere", "runs[0].depends_on"),
    "ends-before": ("runs.0.end_h", 0.0, "runs[0].end_h"),
    "command-mismatch": ("runs.0.command", "sh -c 'touch MARKER'", "runs[0].command"),
    "argv-empty": ("runs.0.argv", [], "runs[0].argv"),
    "argv-newline": ("runs.0.argv", ["echo", "a\nb"], "runs[0].argv"),
    "argv-nul": ("runs.0.argv", ["echo", "a\0b"], "runs[0].argv"),
    "shell-not-sh": ("runs.0.shell", True, "runs[0].argv"),
    "path-dotdot": ("runs.0.checkpoint_dir", "../elsewhere", "runs[0].checkpoint_dir"),
    # A value of another type than its field's, which a preset refuses: nothing coerced.
    "steps-text": ("runs.0.steps", "30", "runs[0].steps"),
    "seed-float": ("runs.0.seed", 0.0, "runs[0].seed"),
    "shell-text": ("runs.0.shell", "false", "runs[0].shell"),
    "start-text": ("runs.0.start_h", "1.0", "runs[0].start_h"),
    "retries-bool": ("runs.0.max_retries", True, "runs[0].max_retries"),
    "cards-text": ("campaign.cards", "2", "campaign.cards"),
}


@pytest.mark.parametrize("case", sorted(EDITS))
@pytest.mark.parametrize("command", ["run", "status", "slurm"])
def test_an_edit_a_preset_could_not_carry_is_refused_at_read(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[], cards=2))
    path, value, field = EDITS[case]
    _edit(plan_path, _set(path, value))
    before = h.tree(tmp_path)
    extra = ["--out", str(tmp_path / "slurm")] if command == "slurm" else []
    rc = main([command, str(plan_path), *extra])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{_file(plan_path, field)}: {field}" in err, err
    assert h.tree(tmp_path) == before and not (tmp_path / "slurm").exists()
    assert not list(tmp_path.rglob("MARKER"))


@pytest.mark.parametrize("seed", [2**62, 2**63 - 1, -(2**63)])
def test_a_seed_that_plans_also_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                     seed: int) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(seed,), robustness=[],
                                                     variants={}))
    assert h.load(plan_path).runs[0].seed == seed
    for argv in (["status", str(plan_path)], ["run", "--dry-run", str(plan_path)],
                 ["slurm", str(plan_path), "--out", str(tmp_path / "slurm")]):
        assert main(argv) == 0, capsys.readouterr().err
    capsys.readouterr()
    env = {**os.environ, "SLURM_ARRAY_TASK_ID": "0", "SLURM_JOB_ID": "1",
           "SLURM_ARRAY_JOB_ID": "1"}
    task = subprocess.run(["bash", str(tmp_path / "slurm" / "campaign.sbatch")], env=env,
                          capture_output=True, text=True, timeout=300)
    assert task.returncode == 0, task.stdout + task.stderr


def test_a_hand_edited_argv_and_command_that_agree_run_as_edited(tmp_path: Path) -> None:
    """An edited plan is the author's: argv is what runs, command only shows it."""
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[],
                                                     variants={}))
    run = h.load(plan_path).runs[0]
    out = plan_path.parent / run.checkpoint_dir / "edited.txt"
    argv = [*h.load(plan_path).runs[0].argv[:1], "-c",
            f"import pathlib; pathlib.Path({str(out)!r}).parent.mkdir(parents=True, "
            f"exist_ok=True); pathlib.Path({str(out)!r}).write_text('ok')"]
    import shlex
    _edit(plan_path, _set("runs.0.argv", argv))
    _edit(plan_path, _set("runs.0.command", shlex.join(argv)))
    proc = h.cli("run", str(plan_path), "--poll", "0.02", "--accept-changed-plan")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert out.read_text() == "ok"


def test_a_plan_written_before_argv_was_recorded_asks_to_plan_again(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    # Such a plan showed each run's command and held no argument vector.
    _edit(plan_path, lambda data: [r.update(command=" ".join(r.pop("argv")))
                                   for r in data["runs"]])
    assert main(["run", "--dry-run", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert "runs[0].argv" in err and "plan the preset again" in err and err.count("\n") == 1


def test_a_run_id_given_twice_is_refused_at_read(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0, 1), robustness=[], cards=2))
    first = h.load(plan_path).runs[0].id
    _edit(plan_path, _set("runs.1.id", first))
    assert main(["status", str(plan_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "used twice" in err, err
    assert err.startswith(f"campaign-planner: error: {plan_path.parent / 'runs.jsonl'}: "), err


def test_a_missing_plan_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["status", str(tmp_path / "nowhere.toml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "nowhere.toml" in err and "Traceback" not in err, err

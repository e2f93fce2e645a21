"""What `run` refuses: a changed plan without the flag, a relaunch with other parameters,
checkpoints it cannot vouch for, and bad input (exit 2, one line, nothing written)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.run_fixtures import harness as h


@pytest.fixture
def ran(tmp_path: Path) -> Path:
    """A one-seed plan run to the end."""
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return plan_path


def _one_line(proc) -> str:  # type: ignore[no-untyped-def]
    assert proc.returncode == 2, proc.stdout + proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    return lines[0]


def test_changed_run_parameters_are_refused_and_named(ran: Path) -> None:
    plan = h.load(ran)
    run = plan.runs[0]
    argv = [("45" if a == "30" and run.argv[i - 1] == "--steps" else a)
            for i, a in enumerate(run.argv)]
    h.edit_plan(ran, 0, steps=45, argv=argv,
                command=run.command.replace("--steps 30", "--steps 45"))
    before = h.tree(ran.parent)
    line = _one_line(h.cli("run", str(ran)))
    assert "plan changed" in line and "--accept-changed-plan" in line
    assert f"1 changed: {run.id} (command, steps 30 → 45)" in line
    # Accepting the plan does not accept mixing: the run's checkpoints say otherwise.
    line = _one_line(h.cli("run", str(ran), "--accept-changed-plan"))
    assert f"run {run.id}: its checkpoints" in line and "steps 30 → 45" in line
    assert "move that folder away" in line
    assert h.tree(ran.parent) == before  # nothing written by either refusal
    # Moved away, the run starts afresh under its new parameters; the others stay done.
    shutil.move(ran.parent / run.checkpoint_dir, ran.parent / "old-checkpoints")
    proc = h.cli("run", str(ran), "--accept-changed-plan", "--poll", "0.02")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    started = [e["run"] for e in h.journal(ran.parent) if e["ev"] == "started"]
    # The robustness evaluation of the changed run is itself unchanged and stays done.
    assert started.count(run.id) == 2 and len(started) == len(plan.runs) + 1
    assert "plan changed, accepted: 1 changed" in proc.stdout


def test_a_replanned_campaign_lists_runs_added_and_removed(ran: Path) -> None:
    data = h.preset(seeds=(0, 1))  # another preset: another campaign id
    other = h.make_plan(ran.parent / "other", data)
    h.copy_plan(other, ran)
    line = _one_line(h.cli("run", str(ran)))
    assert "runs added" in line and "removed" in line


def test_checkpoint_without_manifest_is_refused(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    run = h.load(plan_path).runs[1]
    resume = plan_path.parent / run.resume
    resume.parent.mkdir(parents=True)
    resume.write_text('{"step": 10, "state": "x", "fp": "y"}')
    line = _one_line(h.cli("run", str(plan_path)))
    assert run.id in line and "cannot be checked" in line
    assert not (plan_path.parent / "campaign-run").exists()


def test_a_manifest_edited_behind_the_plan_is_refused(ran: Path) -> None:
    run = h.load(ran).runs[0]
    h.edit_plan(ran, 0)  # rewrite the file unchanged: the same plan
    manifest = ran.parent / run.checkpoint_dir / f"{run.id}.manifest.toml"
    manifest.write_text(manifest.read_text().replace("steps = 30", "steps = 31")
                        .replace('fingerprint = "', 'fingerprint = "0'))
    # Finished runs are not checked again; a run still to do is.
    (ran.parent / "campaign-run" / "journal.jsonl").unlink()
    line = _one_line(h.cli("run", str(ran)))
    assert "steps 31 → 30" in line


@pytest.mark.parametrize(("args", "expect"), [
    (["--cards", "a,b"], "--cards: expected card indices"),
    (["--cards", "1,1"], "--cards: a card is listed twice"),
    (["--cards", "3-1"], "--cards: expected card indices"),
    (["--poll", "0"], "--poll"),
    (["--window-start", "yesterday"], "--window-start"),
])
def test_bad_options(tmp_path: Path, args: list[str], expect: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    assert expect in _one_line(h.cli("run", str(plan_path), *args))
    assert not (plan_path.parent / "campaign-run").exists()


def test_too_few_cards_for_a_wide_run(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), robustness=[], cards=4)
    data["ablation"]["cards_per_run"] = 2
    data["ablation"]["micro_batch"] = 2
    plan_path = h.make_plan(tmp_path / "p", data)
    assert "needs 2 cards; only 1 given" in _one_line(h.cli("run", str(plan_path), "--cards",
                                                            "0"))


def test_missing_and_malformed_plans(tmp_path: Path) -> None:
    assert "file not found" in _one_line(h.cli("run", str(tmp_path / "nope.toml")))
    assert "file not found" in _one_line(h.cli("status", str(tmp_path / "nope.toml")))
    bad = tmp_path / "bad.toml"
    bad.write_text("[campaign\n")
    assert "not valid TOML" in _one_line(h.cli("run", str(bad)))
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    h.edit_plan(plan_path, 0, steps="many")
    line = _one_line(h.cli("run", str(plan_path)))
    assert str(plan_path.parent / "runs.jsonl") in line and "runs[0].steps" in line
    assert not (plan_path.parent / "campaign-run").exists()
    assert "--out" in _one_line(h.cli("slurm", str(plan_path)))

"""A revision made from a revision that never ran (its `run` was stopped before it journalled
it) continues the same journal without --accept-changed-plan; a plan that does not descend
from the journal's still needs it."""

from __future__ import annotations

import subprocess
from datetime import UTC, datetime
from pathlib import Path

from planner.planfile.export import read_plan
from planner.planfile.plan import plan_id
from planner.run.params import plan_fingerprint, run_parameters
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h


def _at(seconds: float) -> str:
    return datetime.fromtimestamp(T0 + seconds, UTC).isoformat()


def _replan(plan: Path, workdir: Path, out: Path, at: float) -> Path:
    r = h.cli("replan", str(plan), "--workdir", str(workdir), "--out", str(out), "--at",
              _at(at))
    assert r.returncode == 0, r.stderr
    return out / "plan.toml"


def _dry_run(plan: Path, workdir: Path) -> subprocess.CompletedProcess[str]:
    return h.cli("run", str(plan), "--workdir", str(workdir), "--dry-run")


def test_a_revision_of_a_revision_that_never_ran_continues_the_journal(
        tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", preset())
    plan = read_plan(plan_path)
    workdir = plan_path.parent
    JournalWriter(plan, workdir).run(f"{plan.campaign.id}-baseline-s0", 0.0, 0.3)
    first = _replan(plan_path, workdir, tmp_path / "r1", 5.0)
    # `run` on the first revision was killed before it journalled it: the next replan is
    # made from that revision, on the same journal.
    second = _replan(first, workdir, tmp_path / "r2", 6.0)
    rev = read_plan(second)
    assert (rev.revision, rev.parent) == (2, f"{plan.campaign.id}-r1")
    proc = _dry_run(second, workdir)
    assert proc.returncode == 0, proc.stderr
    assert "accept-changed-plan" not in proc.stdout + proc.stderr


def test_a_plan_that_does_not_descend_from_the_journals_still_asks(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "w", preset())
    plan = read_plan(plan_path)
    workdir = plan_path.parent
    journal = JournalWriter(plan, workdir)
    journal.run(f"{plan.campaign.id}-baseline-s0", 0.0, 0.3)
    first = _replan(plan_path, workdir, tmp_path / "r1", 5.0)
    second = _replan(first, workdir, tmp_path / "r2", 6.0)
    # The journal runs the second revision; going back to the first is a change to accept.
    rev = read_plan(second)
    journal.add(
        7.0, "plan", fingerprint=plan_fingerprint(rev), path=str(second),
        campaign=rev.campaign.id, plan_id=plan_id(rev), revision=rev.revision,
        parent=rev.parent, runs={r.id: run_parameters(r) for r in rev.runs})
    back = _dry_run(first, workdir)
    assert back.returncode == 2 and "--accept-changed-plan" in back.stderr, back.stderr
    assert _dry_run(second, workdir).returncode == 0
    # Another campaign's plan: not this journal's either.
    other = h.make_plan(tmp_path / "o", preset(seeds=(0, 1)))
    refused = _dry_run(other, workdir)
    assert refused.returncode == 2 and "--accept-changed-plan" in refused.stderr

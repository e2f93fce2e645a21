"""Each run once, wherever it is started from: another working directory or plan copy over
the same absolute checkpoint root, or a plan.toml linked into another folder, finds each
run done (or running) and says so in one line."""

from __future__ import annotations

import os
from pathlib import Path

from tests.run_fixtures import harness as h


def _shared(tmp_path: Path) -> dict[str, object]:
    data = h.preset(seeds=(0, 1), robustness=["baseline"])
    data["ablation"]["checkpoint_root"] = str(tmp_path / "disk" / "ckpt")  # type: ignore[index]
    return data


def _starts(plan_path: Path, workdir: Path) -> dict[str, int]:
    return {rid: len([e for e in trace if e["ev"] == "start"])
            for rid, trace in h.traces(h.load(plan_path), workdir).items()}


def test_another_workdir_over_the_same_checkpoints_runs_nothing_again(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "one", _shared(tmp_path))
    plan = h.load(plan_path)
    first = h.cli("run", str(plan_path), "--poll", "0.02")
    assert first.returncode == 0, first.stdout
    for workdir in (tmp_path / "two", tmp_path / "three"):
        again = h.cli("run", str(plan_path), "--poll", "0.02", "--workdir", str(workdir))
        assert again.returncode == 0, again.stdout + again.stderr
        assert again.stdout.count("finished before") == len(plan.runs)
        assert " started " not in again.stdout
        status = h.cli("status", str(plan_path), "--workdir", str(workdir))
        assert status.returncode == 0 and f"{len(plan.runs)} done" in status.stdout
    # A copy of the plan in another folder is the same campaign over the same checkpoints.
    copy = tmp_path / "copy"
    copy.mkdir()
    h.copy_plan(plan_path, copy / "plan.toml")
    again = h.cli("run", str(copy / "plan.toml"), "--poll", "0.02")
    assert again.returncode == 0 and again.stdout.count("finished before") == len(plan.runs)
    assert set(_starts(plan_path, plan_path.parent).values()) == {1}


def test_a_plan_linked_into_another_folder_runs_where_it_lives(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "one", h.preset(seeds=(0,), robustness=[]))
    other = tmp_path / "other"
    other.mkdir()
    (other / "plan.toml").symlink_to(plan_path)
    assert h.cli("run", str(plan_path), "--poll", "0.02").returncode == 0
    again = h.cli("run", str(other / "plan.toml"), "--poll", "0.02")
    assert again.returncode == 0 and " started " not in again.stdout
    assert not (other / "campaign-run").exists() and not (other / "checkpoints").exists()
    assert set(_starts(plan_path, plan_path.parent).values()) == {1}
    # `status` through the link reads the same journal.
    status = h.cli("status", str(other / "plan.toml"))
    assert status.returncode == 0 and str(plan_path.parent / "campaign-run") in status.stdout


def test_two_executors_at_once_over_shared_checkpoints_run_each_run_once(
        tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "one", _shared(tmp_path))
    one = h.start(plan_path, out=tmp_path / "one.out")
    two = h.start(plan_path, "--workdir", str(tmp_path / "two"), out=tmp_path / "two.out")
    assert one.wait(300) == 0 and two.wait(300) == 0
    assert set(_starts(plan_path, plan_path.parent).values()) == {1}
    said = (tmp_path / "one.out").read_text() + (tmp_path / "two.out").read_text()
    runs = h.load(plan_path).runs
    # Each run started by exactly one of them, and found done by the other.
    assert said.count(" started ") == len(runs) and said.count("finished before") == len(runs)
    assert "(1 cannot start)" not in said and "0 not done" in said


def test_a_dry_run_in_another_workdir_says_what_run_would_do(tmp_path: Path) -> None:
    """Runs finished from elsewhere are done in the dry run too (not `fresh`), and a run
    whose lock another launcher holds is shown waiting for it."""
    import fcntl
    import os

    from planner.run.once import lock_path

    plan_path = h.make_plan(tmp_path / "one", _shared(tmp_path))
    plan = h.load(plan_path)
    first = h.cli("run", str(plan_path), "--poll", "0.02")
    assert first.returncode == 0, first.stdout
    dry = h.cli("run", "--dry-run", str(plan_path), "--workdir", str(tmp_path / "two"))
    assert dry.returncode == 0, dry.stderr
    assert "(fresh)" not in dry.stdout and "after " not in dry.stdout
    line = next(ln for ln in dry.stdout.splitlines() if "done elsewhere" in ln)
    assert all(r.id in line for r in plan.runs), dry.stdout
    # A fresh plan over other checkpoints, one run's lock held by another launcher.
    other = h.make_plan(tmp_path / "other", h.preset(seeds=(0,), robustness=[]))
    held = h.load(other).runs[0]
    path = lock_path(other.parent, held)
    path.parent.mkdir(parents=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        dry = h.cli("run", "--dry-run", str(other))
    finally:
        os.close(fd)
    shown = next(ln for ln in dry.stdout.splitlines() if f" {held.id} " in ln)
    assert "running elsewhere" in shown, dry.stdout
    assert dry.stdout.count("(fresh)") == len(h.load(other).runs) - 1


def test_the_folders_present_are_those_that_exist_however_the_plan_spells_them(
        tmp_path: Path) -> None:
    from types import SimpleNamespace

    from planner.run.once import folders_present

    wd, other = tmp_path / "wd", tmp_path / "disk"
    (wd / "c" / "a").mkdir(parents=True)
    (wd / "top").mkdir()
    (other / "z").mkdir(parents=True)
    spelled = ["c/a", "c/b", "c//a", "c/a/", "c/./a", "./c/a", "top", "top/.", "nope",
               f"{other}/z", f"{other}/y", "nowhere/x"]
    runs = [SimpleNamespace(checkpoint_dir=d) for d in spelled]
    assert folders_present(wd, runs) == {  # type: ignore[arg-type]
        "c/a", "c//a", "c/a/", "c/./a", "./c/a", "top", "top/.", f"{other}/z"}
    # Every folder below a parent of its own: each parent listed once, for all at once.
    below = [d for d in spelled if "/" in d.strip("/.") and not d.endswith("/.")]
    runs = [SimpleNamespace(checkpoint_dir=d) for d in below]
    assert folders_present(wd, runs) == {  # type: ignore[arg-type]
        "c/a", "c//a", "c/a/", "c/./a", "./c/a", f"{other}/z"}
    assert folders_present(tmp_path / "empty", runs) == {  # type: ignore[arg-type]
        f"{other}/z"}
    runs = [SimpleNamespace(checkpoint_dir=d) for d in ("c/x", "nowhere/x")]
    assert folders_present(wd, runs) == set()  # type: ignore[arg-type]
    (wd / "locked").mkdir()
    (wd / "locked" / "a").mkdir()
    (wd / "locked").chmod(0o300)  # not listed: any folder there may be
    try:
        runs = [SimpleNamespace(checkpoint_dir=d) for d in ("locked/a", "locked/b", "c/b")]
        expected = {"locked/a", "locked/b"} if os.geteuid() else {"locked/a"}
        assert folders_present(wd, runs) == expected  # type: ignore[arg-type]
    finally:
        (wd / "locked").chmod(0o700)

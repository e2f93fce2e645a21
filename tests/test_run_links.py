"""No link followed: a symbolic link where the executor writes (campaign-run/, its lock,
journal, logs and exit records, a run's lock and done record) is refused with one line,
and the file it points at is left as it was."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner.nofollow import LinkRefused, append_fd, ensure_dir, replace_file
from tests.run_fixtures import harness as h


def _plan(tmp_path: Path) -> Path:
    return h.make_plan(tmp_path / "p", h.preset(seeds=(0,), variants={}, robustness=[]))


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return victim


@pytest.mark.parametrize("name", ["executor.lock", "journal.jsonl", "."])
def test_a_link_in_the_run_folder_stops_run_with_one_line(tmp_path: Path, name: str) -> None:
    plan_path = _plan(tmp_path)
    victim = _victim(tmp_path)
    rundir = plan_path.parent / "campaign-run"
    if name == ".":
        link, target = rundir, tmp_path / "elsewhere"
        target.mkdir()
    else:
        rundir.mkdir()
        link, target = rundir / name, victim
    link.symlink_to(target)
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{link}: is a symbolic link: refused" in proc.stderr
    assert victim.read_text() == "precious\n"
    assert name != "." or not any(target.iterdir())
    assert not h.traces(h.load(plan_path), plan_path.parent)[h.load(plan_path).runs[0].id]


@pytest.mark.parametrize("where", ["log", "logs", "exits", "lock", "done", "checkpoints"])
def test_a_link_where_a_run_writes_refuses_that_run(tmp_path: Path, where: str) -> None:
    plan_path = _plan(tmp_path)
    victim = _victim(tmp_path)
    wd, run = plan_path.parent, h.load(plan_path).runs[0]
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    paths = {"log": (wd / "campaign-run" / "logs" / f"{run.id}.log", victim),
             "logs": (wd / "campaign-run" / "logs", folder),
             "exits": (wd / "campaign-run" / "exits", folder),
             "lock": (wd / run.checkpoint_dir / f"{run.id}.lock", victim),
             "done": (h.done_record(wd, run), victim),
             "checkpoints": (wd / run.checkpoint_dir, folder)}
    link, target = paths[where]
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(target)
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert f"refused: {link}: is a symbolic link" in proc.stdout
    assert "0 finished" in proc.stdout and "(1 cannot start)" in proc.stdout
    assert victim.read_text() == "precious\n" and not any(folder.iterdir())
    assert link.is_symlink()


def test_the_helpers_refuse_links_fifos_and_hard_links(tmp_path: Path) -> None:
    import os

    victim = _victim(tmp_path)
    (tmp_path / "soft").symlink_to(victim)
    os.link(victim, tmp_path / "hard")
    os.mkfifo(tmp_path / "fifo")
    for name in ("soft", "hard", "fifo"):
        with pytest.raises(LinkRefused):
            append_fd(tmp_path / name)
    (tmp_path / "dir-link").symlink_to(tmp_path)
    with pytest.raises(LinkRefused):
        ensure_dir(tmp_path / "dir-link" / "sub", tmp_path)
    replace_file(tmp_path / "soft", b"new\n")  # replaces the link itself
    assert not (tmp_path / "soft").is_symlink() and victim.read_text() == "precious\n"

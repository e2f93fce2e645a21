"""`run` and `status` on bad input: journal lines that are JSON but not events, options out
of range, a full disk under the journal or under a launcher's exit record."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.run import journal as journal_module
from planner.run.journal import Workspace
from tests.run_fixtures import harness as h


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    rc = main(argv)
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(("line", "why"), [
    ("null", "not an object"), ("[1,2]", "not an object"), ('{"t":1}', "unknown event"),
    ('{"t":1,"ev":"started","run":"x"}', "`attempt`"),
    ('{"t":1,"ev":"exited","run":"x","attempt":1,"outcome":"retry","code":"3"}', "code"),
    ('{"t":"soon","ev":"stop"}', "time"),
    ('{"t":1,"ev":"executor","cards":[true],"window_start":0}', "`cards`"),
    ('{"t":1,"ev":"plan","fingerprint":"f","runs":[],"path":"p"}', "`runs`")])
@pytest.mark.parametrize("command", ["run", "status"])
def test_a_journal_line_that_is_not_an_event_is_named_by_its_number(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, why: str,
        command: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    journal = Workspace(plan_path.parent).journal
    journal.parent.mkdir(parents=True)
    journal.write_text('{"t":1,"ev":"stop","signal":"SIGINT"}\n' + line + "\n")
    before = h.tree(tmp_path)
    err = _one_line_error(capsys, [command, str(plan_path)])
    assert f"{journal}: line 2 is not a journal event" in err and why in err
    assert h.tree(tmp_path) == before


@pytest.mark.parametrize("option", [
    ("--poll", "nan"), ("--poll", "inf"), ("--poll", "0"), ("--grace", "nan"),
    ("--grace", "-1"), ("--cards", "0-200000000"), ("--cards", "9" * 5000),
    ("--cards", "3-1")])
def test_bad_run_options_are_refused_before_anything_starts(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], option: tuple[str, str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    before = h.tree(tmp_path)
    err = _one_line_error(capsys, ["run", str(plan_path), *option])
    assert option[0] in err and h.tree(tmp_path) == before


def test_a_full_disk_under_the_journal_is_one_line_and_the_journal_stays_whole(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    real = os.write

    def write(fd: int, data: bytes) -> int:
        if b'"ev":"exited"' in data:  # half the line reaches the disk, then it is full
            real(fd, data[: len(data) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd, data)

    monkeypatch.setattr(journal_module.os, "write", write)
    err = _one_line_error(capsys, ["run", str(plan_path), "--poll", "0.02"])
    assert "journal.jsonl: cannot write the journal: No space left on device" in err
    monkeypatch.undo()
    raw = Workspace(plan_path.parent).journal.read_bytes()
    assert raw.endswith(b"\n") and all(json.loads(x) for x in raw.splitlines())
    # With space again, the next executor settles what was left and finishes the rest.
    assert main(["run", str(plan_path), "--poll", "0.02"]) == 0
    events = h.journal(plan_path.parent)
    for run in h.load(plan_path).runs:
        done = [e for e in events if e.get("run") == run.id and e.get("outcome") == "finished"]
        assert len(done) == 1
    h.wait_gone(plan_path.parent)


def _lost_exits(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, crash: str) -> Path:
    data = h.preset(seeds=(0,), variants={}, robustness=[], max_retries=1)
    data["ablation"]["baseline"]["factors"]["crash"] = crash
    plan_path = h.make_plan(tmp_path / "p", data)
    ws = Workspace(plan_path.parent)
    blocked = ws.root / "exits" / "full"
    # The launcher's temporary record is a folder: writing it fails like a full disk.
    (blocked / "exit.json.tmp").mkdir(parents=True)
    monkeypatch.setattr(Workspace, "exit_record",
                        lambda self, run_id, attempt, token: blocked / "exit.json")
    return plan_path


def test_a_command_that_completed_without_an_exit_record_is_done(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan_path = _lost_exits(tmp_path, monkeypatch, "never")
    assert main(["run", str(plan_path), "--poll", "0.02"]) == 0
    events = [e for e in h.journal(plan_path.parent) if e["ev"] in ("started", "exited")]
    assert [(e["ev"], e.get("outcome")) for e in events] == [("started", None),
                                                             ("exited", "finished")]
    run = h.load(plan_path).runs[0]
    assert (plan_path.parent / run.checkpoint_dir / f"{run.id}.done").exists()
    # Run again: the done record settles it, nothing starts.
    capsys.readouterr()
    assert main(["run", str(plan_path), "--poll", "0.02"]) == 0
    assert "1 finished" in capsys.readouterr().out
    assert len([e for e in h.journal(plan_path.parent) if e["ev"] == "started"]) == 1


def test_a_launcher_that_cannot_record_an_exit_counts_a_try_and_backs_off(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    plan_path = _lost_exits(tmp_path, monkeypatch, "always")
    assert main(["run", str(plan_path), "--poll", "0.02"]) == 1
    out = capsys.readouterr().out
    assert "no exit record could be written" in out and "marked failed" in out
    events = [e for e in h.journal(plan_path.parent) if e["ev"] in ("started", "exited")]
    assert [(e["ev"], e.get("outcome")) for e in events] == [
        ("started", None), ("exited", "retry"), ("started", None), ("exited", "failed")]
    assert events[2]["t"] - events[1]["t"] >= 2.0  # retried after a back-off, not at once

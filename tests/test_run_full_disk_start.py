"""A full disk when the executor starts: one line naming the file it could not write, exit
2, and no run started."""

from __future__ import annotations

import errno
import os
from pathlib import Path
from typing import Any

import pytest

from planner.cli.main import main
from planner.run.journal import Workspace
from tests.run_fixtures import harness as h


def _full(*args: Any, **kwargs: Any) -> Any:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


@pytest.mark.parametrize(("call", "names"), [
    ("pwrite", "executor.lock"), ("ftruncate", "executor.lock"),
    ("fsync", "journal.jsonl"), ("write", "journal.jsonl")])
def test_a_full_disk_at_the_executors_start_names_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        call: str, names: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    ws = Workspace(plan_path.parent)
    monkeypatch.setattr(os, call, _full)
    rc = main(["run", str(plan_path), "--poll", "0.02"])
    monkeypatch.undo()
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{ws.root / names}: cannot " in err and "No space left on device" in err, err
    assert not (ws.root / "logs").exists()  # nothing started


def test_an_unwritable_file_is_named_when_nothing_more_is_known(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The last resort of every command: an OSError that names its file says which."""
    import sys

    cli_main = sys.modules["planner.cli.main"]

    def fails(argv: Any) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(tmp_path / "x.toml"))

    monkeypatch.setattr(cli_main, "cmd_plan", fails)
    assert main(["--preset", "ablation-7d"]) == 1
    err = capsys.readouterr().err
    assert err == f"campaign-planner: error: cannot write {tmp_path / 'x.toml'}: " \
                  "No space left on device\n"

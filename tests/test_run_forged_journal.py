"""A journal line is not a key to other processes: `run` signals or adopts only a launcher it
can prove it started (`procs.ours`). A `started` line naming a process of someone else's,
with that process's right start time and boot id, is reported in one line and left alone;
the process gets no signal. Journal lines nested too deeply, with numbers too long or times
past any calendar, are one line naming the journal and the line."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.run.journal import Workspace
from planner.run.params import run_fingerprint
from planner.run.procs import identity, ours
from tests.run_fixtures import harness as h

# Records every signal it gets, and answers on stdout: "ready" once its handlers are in
# place, then, for each line read, the signals got so far. It leads a group of its own, as
# a run's launcher does, so a signal meant for a run's group would reach it.
VICTIM = r"""
import signal, sys
got = []
def note(signum, frame):
    got.append(signum)
for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1, signal.SIGQUIT):
    signal.signal(s, note)
print("ready", flush=True)
for line in sys.stdin:
    print(" ".join(map(str, got)) or "none", flush=True)
"""


@pytest.fixture
def victim() -> Iterator[subprocess.Popen[str]]:
    proc = subprocess.Popen([sys.executable, "-c", VICTIM], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True, start_new_session=True)
    assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
    yield proc
    proc.kill()
    proc.wait()


def _signals_got(proc: subprocess.Popen[str]) -> str:
    """What the victim says it got; it answers only while alive."""
    assert proc.poll() is None, "the victim is gone"
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("?\n")
    proc.stdin.flush()
    return proc.stdout.readline().strip()


def _forge(workdir: Path, run_id: str, fingerprint: str, pid: int,
           token: str = "0123abcd") -> None:
    journal = Workspace(workdir).journal
    journal.parent.mkdir(parents=True, exist_ok=True)
    line = {"t": 1_767_225_600.0, "ev": "started", "run": run_id, "attempt": 1, "cards": [0],
            "fingerprint": fingerprint, "resume": "", "mode": "exec", **identity(pid),
            "token": token}
    journal.write_text(json.dumps(line) + "\n")


def test_a_ghost_pid_in_the_journal_gets_no_signal(
        tmp_path: Path, victim: subprocess.Popen[str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[], variants={}))
    _forge(plan_path.parent, "not-a-run-of-this-plan", "f" * 64, victim.pid)
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"left alone: pid {victim.pid}" in proc.stdout, proc.stdout
    assert "stopping" not in proc.stdout
    assert _signals_got(victim) == "none"


def test_a_forged_start_of_a_planned_run_is_not_adopted_nor_stopped_on_ctrl_c(
        tmp_path: Path, victim: subprocess.Popen[str]) -> None:
    gate = tmp_path / "gate"
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[], variants={},
                                                     gate=gate))
    run = h.load(plan_path).runs[0]
    _forge(plan_path.parent, run.id, run_fingerprint(run), victim.pid)
    executor = subprocess.Popen([sys.executable, "-m", "planner", "run", str(plan_path),
                                 "--poll", "0.02", "--grace", "5"],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert executor.stdout is not None
    # Should the executor wait on the forged run instead, it is ended and the test fails.
    watchdog = threading.Timer(120, executor.kill)
    watchdog.start()
    seen = []
    try:
        for line in executor.stdout:  # the real run starts: the forged line was not adopted
            seen.append(line)
            if f"started {run.id}" in line:
                break
    finally:
        watchdog.cancel()
    assert any(f"left alone: pid {victim.pid}" in x for x in seen), seen
    assert not any("adopted" in x for x in seen), seen
    executor.send_signal(signal.SIGINT)
    rest = executor.communicate(timeout=300)[0]
    assert executor.returncode == 128 + signal.SIGINT, "".join(seen) + rest
    assert _signals_got(victim) == "none"
    h.wait_gone(plan_path.parent)


def test_a_launcher_of_this_planner_is_proven_and_a_bare_pid_is_not(
        tmp_path: Path, victim: subprocess.Popen[str]) -> None:
    """What `ours` asks: the environment names the run, its token and its folder."""
    me = {**identity(victim.pid), "token": "0123abcd"}
    assert not ours(me, "r", tmp_path)
    env = {**os.environ, "CAMPAIGN_RUN_ID": "r", "CAMPAIGN_RUN_TOKEN": "0123abcd",
           "CAMPAIGN_WORKDIR": str(tmp_path)}
    marked = subprocess.Popen([sys.executable, "-c", VICTIM], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, start_new_session=True,
                              env=env)
    try:
        assert marked.stdout is not None and marked.stdout.readline().strip() == "ready"
        process = {**identity(marked.pid), "token": "0123abcd"}
        assert ours(process, "r", tmp_path)
        assert not ours({**process, "token": "ffff0000"}, "r", tmp_path)
        assert not ours(process, "other-run", tmp_path)
        assert not ours(process, "r", tmp_path / "elsewhere")
        assert not ours({**process, "pstart": process["pstart"] + 1}, "r", tmp_path)
        assert not ours({**process, "pstart": None}, "r", tmp_path)
    finally:
        marked.kill()
        marked.wait()


DEEP = "[" * 200_000 + "]" * 200_000
LINES = {
    "nested": ('{"t":1,"ev":"stop","x":' + DEEP + "}", "nested too deeply"),
    "nested-array": (DEEP, "nested too deeply"),
    "huge-integer": ('{"t":1,"ev":"stop","x":' + "9" * 5000 + "}", "number too long"),
    "huge-time": ('{"t":1e400,"ev":"stop"}', "`t`"),
    "far-future": ('{"t":253402300800,"ev":"stop"}', "`t`"),
    "far-future-window": ('{"t":1,"ev":"executor","cards":[0],"window_start":9.9e10}',
                          "`window_start`"),
    "before-1970": ('{"t":1,"ev":"executor","cards":[0],"window_start":-9.9e10}',
                    "`window_start`"),
    "far-future-checkpoint": ('{"t":1,"ev":"checkpointed","run":"r","attempt":1,'
                              '"mtime":1e300}', "`mtime`"),
    "token-path": ('{"t":1,"ev":"started","run":"r","attempt":1,"cards":[0],'
                   '"fingerprint":"f","pid":5,"token":"../../x"}', "`token`"),
    "run-path": ('{"t":1,"ev":"reset","run":"../x"}', "`run`"),
}


@pytest.mark.parametrize("case", sorted(LINES))
@pytest.mark.parametrize("command", ["status", "status --json", "run", "run --dry-run",
                                     "report", "replan"])
def test_a_hostile_journal_line_is_one_line_naming_the_journal_and_the_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[], variants={}))
    journal = Workspace(plan_path.parent).journal
    journal.parent.mkdir(parents=True)
    line, why = LINES[case]
    journal.write_text('{"t":1,"ev":"stop","signal":"SIGINT"}\n' + line + "\n")
    name, *flags = command.split()
    out = {"report": ["--out", str(tmp_path / "r.html"), "--workdir", str(plan_path.parent)],
           "replan": ["--out", str(tmp_path / "r")]}.get(name, [])
    rc = main([name, str(plan_path), *flags, *out])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{journal}: line 2 is not a journal event" in err and why in err, err
    assert not (tmp_path / "r.html").exists() and not (tmp_path / "r").exists()

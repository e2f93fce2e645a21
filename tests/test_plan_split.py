"""A large plan read in two processes at once (`plan_split`) is the plan one process reads,
or nothing: a part either process cannot vouch for, a second process that fails, is
killed or answers nonsense, all leave the plan to the one-process reading (which names
what is wrong), and no process is left behind."""

from __future__ import annotations

import marshal
import os
import signal
import threading
import tomllib
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner.errors import InputError
from planner.planfile import export
from planner.planfile.plan import Plan
from planner.planning import plan_bulk, plan_fast, plan_split
from tests.run_fixtures import harness as h
from tests.test_plan_fast import _mutated


def _preset(**kw: Any) -> dict[str, Any]:
    return h.preset(seeds=(0, 1, 2), max_retries=1,
                    variants={"a": {"lr": "0.2"}, "b": {"lr": "0.3"}}, **kw)


@pytest.fixture(scope="module")
def text(tmp_path_factory: pytest.TempPathFactory) -> str:
    return h.make_plan(tmp_path_factory.mktemp("p"), _preset()).read_text()


@pytest.fixture(scope="module")
def shell_text(tmp_path_factory: pytest.TempPathFactory) -> str:
    return h.make_plan(tmp_path_factory.mktemp("s"), _preset(shell=True)).read_text()


def _with_held(text: str) -> str:
    runs = text[text.index("\n\n[[runs]]\n"):]
    held = runs.replace("[[runs]]", "[[held]]").replace('id = "', 'id = "h-')
    return text + held[1:]


def _one_process(raw: bytes) -> Plan | None:
    reading = plan_fast.read(raw, columns=True)
    return None if reading is None else export._bulk(reading)


def _same(a: Plan | None, b: Plan | None) -> None:
    assert a is not None and b is not None
    assert a.model_dump_json() == b.model_dump_json()
    for x, y in zip(a.runs + a.held, b.runs + b.held, strict=True):
        assert list(x.__dict__) == list(y.__dict__)  # fields in the model's order
        assert list(map(type, x.__dict__.values())) == list(map(type, y.__dict__.values()))


@pytest.fixture
def parts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The pids of the second processes started. Threads other tests left idle in this
    process (an event loop's executor) are not counted: the command's process has none."""
    real, stray = threading.active_count, threading.active_count() - 1
    monkeypatch.setattr(threading, "active_count", lambda: real() - stray)
    started: list[int] = []
    start = plan_split._start

    def spy(*args: Any) -> Any:
        part = start(*args)
        if part is not None:
            started.append(part.pid)
        return part

    monkeypatch.setattr(plan_split, "_start", spy)
    return started


def _all_ended(pids: list[int]) -> None:
    for pid in pids:  # each one reaped already: not a child of this process any more
        with pytest.raises(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)


@pytest.mark.parametrize("form", ["plain", "held", "shell", "escapes", "non-ascii"])
@pytest.mark.parametrize("share", [True, False])
def test_a_plan_read_in_two_processes_is_the_plan_one_process_reads(
        text: str, shell_text: str, form: str, share: bool, parts: list[int]) -> None:
    chosen = {"plain": text, "held": _with_held(text), "shell": shell_text,
              "escapes": text.replace('lr=0.2"', 'lr=0.2\\t\\u00e9"'),
              "non-ascii": text.replace('lr=0.2"', 'lr=0.2é…"')}[form]
    raw = chosen.encode()
    split = plan_split.read(raw, share=share, at_least=0)
    _same(split, _one_process(raw))
    assert len(parts) == 1
    _all_ended(parts)


def test_the_runs_are_cut_at_a_header_past_the_first_share(text: str) -> None:
    raw = text.encode()
    cut = plan_split._cut(raw)
    assert cut is not None
    mid, end = cut
    first = raw.index(b"\n\n[[runs]]\n")
    assert raw[mid:mid + 11] == b"\n\n[[runs]]\n" and end == len(raw) - 1
    tables = raw.count(b"[[runs]]")
    assert first < mid and abs(raw.count(b"[[runs]]", 0, mid)
                               - tables * plan_split.FIRST_SHARE) <= 1
    one = text[:text.index("\n\n[[runs]]\n", text.index("\n\n[[runs]]\n") + 1) + 1]
    assert plan_split._cut(one.encode()) is None  # a single run: nothing to cut


def _edit_nth(text: str, key: str, value: str, nth: int) -> str:
    runs = text.index("\n\n[[runs]]\n")
    starts = [i for i in range(runs, len(text)) if text.startswith(f"\n{key} = ", i)]
    at = starts[nth] + 1
    return text[:at] + f"{key} = {value}" + text[text.index("\n", at):]


@pytest.mark.parametrize("nth", [0, -1])  # in this process's part, in the other's
@pytest.mark.parametrize("key,value", [("steps", "-1"), ("steps", "1.5"),
                                       ("id", '"a b"'), ("start_h", "nan")])
def test_a_part_either_process_cannot_vouch_for_is_left_to_one_process(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[int],
        key: str, value: str, nth: int) -> None:
    edited = _edit_nth(text, key, value, nth)
    assert plan_split.read(edited.encode(), at_least=0) is None
    assert len(parts) == 1  # read in two processes, and refused
    _all_ended(parts)
    path = tmp_path / "plan.toml"
    path.write_text(edited)
    monkeypatch.setenv("CAMPAIGN_PLANNER_CACHE", "off")
    with pytest.raises(InputError) as split:
        monkeypatch.setattr(plan_split, "LARGE", 0)
        export.read_plan(path)
    monkeypatch.setattr(plan_split, "LARGE", 2**62)
    with pytest.raises(InputError) as alone:
        export.read_plan(path)
    assert str(split.value) == str(alone.value)


def _outcome(path: Path, monkeypatch: pytest.MonkeyPatch, large: int) -> Any:
    with monkeypatch.context() as m:
        m.setenv("CAMPAIGN_PLANNER_CACHE", "off")
        m.setattr(plan_split, "LARGE", large)
        try:
            return export.read_plan(path).model_dump_json()
        except InputError as exc:
            return str(exc)


@pytest.mark.parametrize("tail", ["\n[[held]]\n", "\n[[held]]\nid = 1\n", "\n[[runs]]\n",
                                  "\n[[held]]\n\n[[runs]]\n", "x = 1\n", "\n[[held]]"])
def test_a_file_ending_in_an_array_header_reads_as_one_process_reads_it(
        text: str, tail: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        parts: list[int]) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(text + tail)
    split, alone = _outcome(path, monkeypatch, 0), _outcome(path, monkeypatch, 2**62)
    assert split == alone
    _all_ended(parts)


def test_a_colon_in_the_second_part_is_read_as_one_process_reads_it(
        text: str, parts: list[int]) -> None:
    edited = _edit_nth(text, "value", '"host:8080"', -1)
    raw = edited.encode()
    _same(plan_split.read(raw, at_least=0), _one_process(raw))
    assert len(parts) == 1


def _dies(*_args: Any) -> bytes:
    os.kill(os.getpid(), signal.SIGKILL)
    return b""


def _raises(*_args: Any) -> bytes:
    raise RuntimeError("a fault in the second process")


@pytest.mark.parametrize("second", [
    _dies, _raises, lambda *_a: os._exit(0), lambda *_a: b"", lambda *_a: b"nonsense",
    lambda *_a: marshal.dumps((True, [1, 2])), lambda *_a: marshal.dumps([True]),
    lambda *_a: marshal.dumps(("yes", []))],
    ids=["killed", "raises", "exits-silent", "empty", "not-marshal", "not-runs",
         "not-a-pair", "not-a-flag"])
def test_a_second_process_that_fails_leaves_the_plan_to_one_process(
        text: str, monkeypatch: pytest.MonkeyPatch, parts: list[int], second: Any) -> None:
    monkeypatch.setattr(plan_split, "_second", second)
    assert plan_split.read(text.encode(), at_least=0) is None
    assert len(parts) == 1
    _all_ended(parts)


def test_an_interrupted_read_ends_the_second_process(
        text: str, monkeypatch: pytest.MonkeyPatch, parts: list[int]) -> None:
    def interrupted(*_a: Any, **_k: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(plan_bulk, "runs_of", interrupted)
    with pytest.raises(KeyboardInterrupt):
        plan_split.read(text.encode(), at_least=0)
    assert len(parts) == 1
    _all_ended(parts)


def test_one_processor_other_threads_or_a_small_plan_read_in_one_process(
        text: str, monkeypatch: pytest.MonkeyPatch, parts: list[int]) -> None:
    raw = text.encode()
    assert plan_split.read(raw) is None  # below `LARGE`
    done = threading.Event()
    thread = threading.Thread(target=done.wait)
    thread.start()
    try:
        assert plan_split.read(raw, at_least=0) is None
    finally:
        done.set()
        thread.join()
    monkeypatch.setattr(os, "sched_getaffinity", lambda _pid: {0})
    assert plan_split.read(raw, at_least=0) is None
    assert parts == []


def test_read_plan_reads_a_large_plan_in_two_processes(
        text: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: list[int]) -> None:
    path = tmp_path / "plan.toml"
    path.write_text(text)
    monkeypatch.setenv("CAMPAIGN_PLANNER_CACHE", "off")
    monkeypatch.setattr(plan_split, "LARGE", 0)
    _same(export.read_plan(path), _one_process(text.encode()))
    assert len(parts) == 1
    _all_ended(parts)


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_an_edited_plan_read_in_two_processes_is_the_same_plan_or_none(
        text: str, data: st.DataObject, parts: list[int]) -> None:
    raw = _mutated(text, data).encode("utf-8", "surrogatepass")
    split = plan_split.read(raw, at_least=0)
    if split is not None:  # read the TOML parser's way, the same plan
        _same(split, export._checked(tomllib.loads(raw.decode()), "plan.toml"))


def test_a_reading_up_to_a_cut_holds_the_runs_before_it_only(text: str) -> None:
    raw = _with_held(text).encode()
    cut = plan_split._cut(raw)
    assert cut is not None
    mid, _ = cut
    whole, part = plan_fast.read(raw, columns=True), plan_fast.read(raw, True, runs_until=mid)
    assert whole is not None and part is not None
    before = plan_fast.rows(whole.columns["runs"])[:raw.count(b"[[runs]]", 0, mid)]
    assert plan_fast.rows(part.columns["runs"]) == before
    assert plan_fast.rows(part.columns["held"]) == plan_fast.rows(whole.columns["held"])
    for wrong in (mid + 1, mid - 1, 0, len(raw)):  # not where a table's header begins
        assert plan_fast.read(raw, True, runs_until=wrong) is None

"""The first minute of a run tells the truth: a fake trainer at 1 s a step after 10 s of
start-up, watched by the executor's own sampling on a fake clock (progress files and a
checkpoint written with given times, the journal's lines at given times). Every second of
the first 30, `status`, `status --json`, the Progress screen and `replan` show either
"not yet observed" or a step time within 10% of 1 s; after SIGKILL with a checkpoint at
step 20, each says the run resumes from step 20. No clock is read and nothing sleeps."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from planner.planfile.export import read_plan
from planner.planfile.plan import Plan, Run
from planner.run.journal import Workspace, fold, read_events
from planner.run.procs import identity
from planner.run.progress import Sampler, progress_path
from planner.run.replan import replan
from planner.run.replan_text import render as render_replan
from planner.run.resume import NONE, Resume
from planner.run.sampling import Active, Sampling
from planner.run.status import render, summarize
from screens.progress_view import headline, rate_lines, view
from tests.replan_support import T0, JournalWriter, preset
from tests.run_fixtures import harness as h

STARTUP_S, STEP_S, STEPS, CHECKPOINT = 10.0, 1.0, 30, 20
SECONDS = re.compile(r"(?<!planned )(\d+(?:\.\d+)?) s/step(?! assumed)")


def honest(rate: float | None) -> bool:
    """Not yet observed, or within 10% of the trainer's true 1 s a step."""
    return rate is None or abs(rate - STEP_S) <= 0.1 * STEP_S


def rates_in(text: str) -> list[float]:
    """Every observed seconds-per-step figure a text shows (planned ones excluded)."""
    return [float(x) for x in SECONDS.findall(text)]


class FakeRun:
    """Two runs of the fake trainer on two cards, the executor's sampling on a fake clock."""

    def __init__(self, tmp_path: Path, *, report_checkpoint: bool) -> None:
        data = preset(seeds=(0,), cards=2, window_s=600.0, step_s=0.5)
        data["ablation"]["steps"] = STEPS
        self.plan_path = h.make_plan(tmp_path / "w", data)
        self.plan: Plan = read_plan(self.plan_path)
        self.ws = Workspace(self.plan_path.parent)
        self.report_checkpoint = report_checkpoint
        self.journal = JournalWriter(self.plan, self.ws.workdir)
        self.now = 0.0
        # Stand-ins for the runs' processes: alive until the test kills them.
        self.procs = [subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"],
                                       start_new_session=True) for _ in self.plan.runs]
        self.sampling = Sampling(Sampler(self.ws.workdir), self.event, lambda _: None)
        self.active = []
        for card, (run, proc) in enumerate(zip(self.plan.runs, self.procs, strict=True)):
            process = identity(proc.pid)
            self.journal.add(0.0, "started", run=run.id, attempt=1, cards=[card],
                             fingerprint=self.journal_fingerprint(run), resume="", **process)
            self.active.append(Active(run, 1, [card], process, None, T0))
            (self.ws.workdir / run.checkpoint_dir).mkdir(parents=True, exist_ok=True)

    def journal_fingerprint(self, run: Run) -> str:
        from planner.run.params import run_fingerprint

        return run_fingerprint(run)

    def event(self, ev: str, **fields: Any) -> None:
        self.journal.add(self.now, ev, **fields)

    def write(self, path: Path, data: dict[str, Any], at: float) -> None:
        path.write_text(json.dumps(data))
        os.utime(path, (T0 + at, T0 + at))

    def trainer(self, run: Run, t: float) -> None:
        """The fake trainer at `t`: step k ends at 10 + k s; a checkpoint at step 20."""
        step = min(int((t - STARTUP_S) / STEP_S), STEPS) if t >= STARTUP_S + STEP_S else 0
        if not step:
            return
        at = STARTUP_S + step * STEP_S
        saved = step >= CHECKPOINT
        extra = {"checkpoint_step": CHECKPOINT} if saved and self.report_checkpoint else {}
        self.write(progress_path(self.ws.workdir, run), {"step": step, **extra},
                   at + (0.002 if step == CHECKPOINT and extra else 0.0))
        resume = self.ws.workdir / run.resume
        if saved and not resume.exists():
            self.write(resume, {"step": CHECKPOINT}, STARTUP_S + CHECKPOINT * STEP_S + 0.001)

    def tick(self, t: float) -> None:
        """The trainer runs to `t`; the executor polls once."""
        self.now = t
        for a in self.active:
            self.trainer(a.run, t)
            self.sampling.sample(a, T0 + t)

    def kill(self, *, executor_too: bool) -> None:
        """SIGKILL the runs; unless the executor died with them, it reaps and journals."""
        for proc in self.procs:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        if executor_too:
            return
        for a in self.active:
            self.sampling.sample(a, T0 + self.now, final=True)
            self.event("exited", run=a.run.id, attempt=1, code=None, outcome="interrupted")

    def close(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()

    def figures(self) -> Iterator[tuple[str, list[float | None], str]]:
        """(where, step times it shows, its text) from status, --json, the screen, replan."""
        hist = fold(read_events(self.ws.journal))
        now = T0 + self.now
        s = summarize(self.plan, hist, self.ws, now=now)
        text = render(s)
        yield "status", [float(x) for x in rates_in(text)], text
        shown = json.loads(json.dumps(s))
        yield "status --json", [v["seconds_per_step"] for v in shown["observed"].values()] + [
            r["observed_s_per_step"] for r in shown["runs"]], json.dumps(shown["observed"])
        v = view(self.plan, hist, self.ws, now)
        screen = "\n".join([*headline(v), *rate_lines(v)])
        yield "Progress screen", [r.seconds_per_step if r.seen else None
                                  for r in v.observed.values()] + rates_in(screen), screen
        r = replan(self.plan, hist, self.ws, now)
        said = render_replan(r, Path("revision-1/plan.toml"), self.ws.workdir)
        yield "replan", [x.seconds_per_step if x.seen else None
                         for x in r.observed.values()] + rates_in(said), said


@pytest.fixture(params=[True, False], ids=["checkpoint-step", "no-checkpoint-step"])
def fake(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[FakeRun]:
    run = FakeRun(tmp_path, report_checkpoint=request.param)
    yield run
    run.close()


def test_the_first_30_seconds_show_no_figure_or_the_true_one(fake: FakeRun) -> None:
    observed_at = None
    for t in range(1, 31):
        fake.tick(float(t))
        for where, figures, text in fake.figures():
            assert all(map(honest, figures)), f"at {t} s, {where}: {figures}\n{text}"
            if not any(f is not None for f in figures):
                assert "not yet" in text, f"at {t} s, {where} shows neither:\n{text}"
            elif observed_at is None or where == "status":
                observed_at = observed_at or t
    # A figure comes soon after the first step (11 s), not a minute later.
    assert observed_at is not None and observed_at <= 16
    s = summarize(fake.plan, fold(read_events(fake.ws.journal)), fake.ws, now=T0 + 16.0)
    assert all(r["progress"] == "reported" and r["step"] >= 6 for r in s["runs"])


@pytest.mark.parametrize("executor_too", [False, True], ids=["run-killed", "all-killed"])
def test_after_sigkill_it_resumes_from_the_checkpoint(fake: FakeRun, executor_too: bool
                                                      ) -> None:
    for t in range(1, 32):
        fake.tick(float(t))
    fake.kill(executor_too=executor_too)
    hist = fold(read_events(fake.ws.journal))
    now = T0 + 32.0
    s = summarize(fake.plan, hist, fake.ws, now=now)
    assert [r["resumes_from_step"] for r in s["runs"]] == [CHECKPOINT] * 2
    assert render(s).count(f"resumes from step {CHECKPOINT}/{STEPS}") == 2
    r = replan(fake.plan, hist, fake.ws, now)
    assert {k: v.step for k, v in r.resuming.items()} == {
        run.id: CHECKPOINT for run in fake.plan.runs}
    assert f"from step {CHECKPOINT}" in render_replan(r, Path("p"), fake.ws.workdir)
    if fake.report_checkpoint:
        assert all(v == Resume(CHECKPOINT, recorded=True) for v in r.resuming.values())
        assert "resumes from step 20/30 at least" not in render(s)


def test_a_run_that_ignores_its_resume_path_fails_with_the_reason(tmp_path: Path) -> None:
    """The fixture crashes halfway (step 15, just checkpointed), then ignores its checkpoint
    on the retry and holds before step 5: the executor stops it and fails it, saying why."""
    data = h.preset(steps=30, seeds=(0,), variants={}, robustness=[], cards=1, every=5)
    data["ablation"]["baseline"]["factors"].update(crash="once", fresh="retry")
    plan_path = h.make_plan(tmp_path / "w", data)
    out = tmp_path / "out.txt"
    assert h.start(plan_path, "--poll", "0.05", out=out).wait(120) == 1
    events = h.journal(plan_path.parent)
    exits = [e for e in events if e["ev"] == "exited"]
    assert [e["outcome"] for e in exits] == ["retry", "failed"]
    assert "ignored its resume path" in exits[-1]["reason"]
    assert "holds step 15" in exits[-1]["reason"]
    assert "ignored its resume path" in out.read_text()
    run = h.load(plan_path).runs[0]
    # Stopped before it could save over the checkpoint it ignored.
    assert json.loads((plan_path.parent / run.resume).read_text())["step"] == 15
    r = h.cli("status", str(plan_path))
    assert "failed" in r.stdout and "ignored its resume path" in r.stdout


def test_resume_words() -> None:
    assert Resume(20, True).words(30) == "step 20/30"
    assert Resume(20, False).words(30) == "step 20/30 at least"
    assert NONE.step == 0

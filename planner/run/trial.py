"""Trials of the real command: each configuration's run started as `run` starts it, for a
budget of steps or minutes, then stopped, its step times read from the progress it reports.

Each run gets the environment of the run contract (`planner.run.procs.run_env`), with its
checkpoints, exports and `CAMPAIGN_WORKDIR` in the trial's scratch folder, never the
campaign's, and `CAMPAIGN_TRIAL=1` (with `--steps`, `CAMPAIGN_TRIAL_STEPS` too). It starts
in the working directory `run` would use, as the leader of a new process group; once its
budget is met (or it reports no new step in time) the group gets SIGTERM, a grace period,
then SIGKILL. Configurations wait for a free group of cards: one after another on one
group, side by side on several.
"""

from __future__ import annotations

import contextlib
import re
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from planner.planfile.plan import Run
from planner.run.procs import run_env, signal_group
from planner.run.progress import progress_path, read_report
from planner.run.trial_device import MemoryWatch, Nvml
from planner.run.trial_stats import (
    Sample,
    Timing,
    plausible,
    timed_start,
    timed_steps,
    timing,
)

Outcome = Literal["measured", "crashed", "out-of-memory", "no-progress"]
OOM = re.compile(r"out of memory|OutOfMemoryError|CUBLAS_STATUS_ALLOC_FAILED", re.IGNORECASE)
"""What a command that ran out of device memory prints (torch, CUDA, cuBLAS, HIP)."""
TAIL_BYTES = 65536


@dataclass(frozen=True)
class Budget:
    """How long each configuration runs, and when it is given up on."""

    steps: int | None = None
    """Timed steps (after warm-up)."""
    minutes: float | None = None
    """Or minutes of timed steps."""
    skip: int = 2
    """Steps not timed after the command's own warm-up (first steps: compilation, caches)."""
    timeout_s: float = 600.0
    """No new step reported for this long (from the start, too): no progress."""
    grace_s: float = 10.0
    """Between SIGTERM and SIGKILL."""
    poll_s: float = 0.1
    """How often the progress file is read."""


@dataclass
class Result:
    """How one configuration's trial went."""

    run: Run
    outcome: Outcome
    reason: str
    timing: Timing | None
    peak_bytes: int | None
    memory_source: Literal["reported", "nvml"] | None
    wall_s: float
    exit_code: int | None
    log: Path


@dataclass
class Attempt:
    """A configuration's command, running."""

    run: Run
    group: list[int]
    proc: subprocess.Popen[bytes]
    log: Path
    started: float
    last_change: float
    watch: MemoryWatch | None
    samples: list[Sample] = field(default_factory=list)
    reported_peak: int | None = None
    verdict: tuple[Outcome, str] | None = None
    stop_at: float | None = None
    killed: bool = False


def trial_env(run: Run, scratch: Path, cards: list[int], campaign_id: str,
              budget: Budget) -> dict[str, str]:
    """The run's environment as `run` gives it, pointed at the scratch folder, plus the
    trial's own variables."""
    # Not named for the trackers: a trial logging as the run would join the run's W&B run.
    env = run_env(run, scratch, cards, 1, Path("plan.toml"), campaign_id, tracking=False)
    env["CAMPAIGN_PLAN"] = ""  # a trial has no plan
    env["CAMPAIGN_TRIAL"] = "1"
    env.pop("CAMPAIGN_TRIAL_STEPS", None)
    if budget.steps is not None:
        # The steps this trial times, and those it drops after the command's warm-up.
        env["CAMPAIGN_TRIAL_STEPS"] = str(budget.steps + budget.skip)
    return env


def _tail(log: Path) -> str:
    try:
        with open(log, "rb") as fh:
            fh.seek(0, 2)
            fh.seek(max(0, fh.tell() - TAIL_BYTES))
            return fh.read().decode(errors="replace")
    except OSError:
        return ""


ESCAPE = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?")
"""A terminal's colour and title sequences, as a command's output carries them."""
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _last_line(text: str, pattern: re.Pattern[str] | None = None) -> str:
    # The line becomes a reason shown on terminals and kept in measurements.toml: it
    # carries none of the command's control characters.
    lines = [CONTROL.sub("?", ESCAPE.sub("", ln)).strip() for ln in text.splitlines()]
    lines = [ln for ln in lines if ln]
    if pattern is not None:
        lines = [ln for ln in lines if pattern.search(ln)]
    return lines[-1][:200] if lines else ""


def exit_words(code: int) -> str:
    """How a command ended, in words."""
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
        return f"killed by signal {-code}"
    return f"exited with code {code}"


class Trial:
    """Trials of `runs`, each on a free group of `groups`, in the order given."""

    def __init__(self, runs: list[Run], groups: list[list[int]], *, workdir: Path,
                 scratch: Path, campaign_id: str, budget: Budget, nvml: Nvml | None = None,
                 say: Callable[[str], None] = print,
                 clock: Callable[[], float] = time.time) -> None:
        self.runs, self.groups, self.workdir, self.scratch = runs, groups, workdir, scratch
        self.campaign_id, self.budget, self.nvml = campaign_id, budget, nvml
        self.say, self.clock = say, clock
        self.active: list[Attempt] = []
        self.results: dict[str, Result] = {}

    def run(self) -> list[Result]:
        """Every configuration's result, in the order of `runs`."""
        queue, free = list(self.runs), [list(g) for g in self.groups]
        try:
            while queue or self.active:
                while queue and free:
                    group = free.pop(0)
                    if not self.start(queue.pop(0), group):
                        free.insert(0, group)
                for a in list(self.active):
                    if self.poll(a):
                        self.active.remove(a)
                        free.append(a.group)
                        self.finish(a)
                if self.active:
                    time.sleep(self.budget.poll_s)
        finally:
            self.abandon()
        return [self.results[r.id] for r in self.runs]

    def start(self, run: Run, group: list[int]) -> bool:
        """Start `run`'s command on `group`; False when it could not start (recorded)."""
        n = len(self.results) + len(self.active) + 1
        where = f"card {','.join(map(str, group))}" if group else "the CPU"
        self.say(f"{run.variant}: starting on {where} ({n}/{len(self.runs)})")
        ckpt = self.scratch / run.checkpoint_dir
        ckpt.mkdir(parents=True, exist_ok=True)
        (self.scratch / run.export_name).parent.mkdir(parents=True, exist_ok=True)
        log = self.scratch / "logs" / f"{run.id}.log"
        log.parent.mkdir(parents=True, exist_ok=True)
        env = trial_env(run, self.scratch, group, self.campaign_id, self.budget)
        watch = MemoryWatch(self.nvml, group) if self.nvml is not None and group else None
        started = self.clock()
        with open(log, "wb") as out:
            try:
                proc = subprocess.Popen(run.argv, stdin=subprocess.DEVNULL, stdout=out,
                                        stderr=subprocess.STDOUT, cwd=self.workdir, env=env,
                                        start_new_session=True)
            except OSError as exc:
                out.write(f"cannot start {run.argv[0]!r}: {exc.strerror or exc}\n".encode())
                self.results[run.id] = Result(run, "crashed", f"cannot start {run.argv[0]!r}: "
                                              f"{exc.strerror or exc}", None, None, None, 0.0,
                                              None, log)
                self.say(self.line(self.results[run.id]))
                return False
        self.active.append(Attempt(run, group, proc, log, started, started, watch))
        return True

    def read(self, a: Attempt) -> None:
        """Take the command's latest report, and a memory sample."""
        report = read_report(progress_path(self.scratch, a.run))
        if report is not None:
            last = a.samples[-1] if a.samples else None
            if last is None or (report.step, report.warmup) != (last.step, last.warmup):
                a.samples.append(Sample(report.mtime, report.step, report.warmup))
                a.last_change = self.clock()
            if report.peak_memory_bytes is not None:
                a.reported_peak = max(a.reported_peak or 0, report.peak_memory_bytes)
        if a.watch is not None:
            a.watch.sample()

    def met(self, a: Attempt, now: float) -> bool:
        """Whether the budget is spent."""
        b = self.budget
        if b.steps is not None:
            return timed_steps(a.samples, b.skip) >= b.steps
        start = timed_start(a.samples, b.skip)
        return (b.minutes is not None and start is not None
                and now - a.samples[start].t >= b.minutes * 60.0)

    def poll(self, a: Attempt) -> bool:
        """Look at one running command; True once it has ended."""
        now = self.clock()
        if a.stop_at is not None:
            if a.proc.poll() is not None:
                return True
            if not a.killed and now >= a.stop_at:
                signal_group(a.proc.pid, signal.SIGKILL)
                a.killed = True
            return False
        code = a.proc.poll()
        self.read(a)
        if code is not None:
            a.verdict = self.ended(a, code)
            return True
        if self.met(a, now):
            self.stop(a, ("measured", ""), now)
        elif now - a.last_change > self.budget.timeout_s:
            t = f"{self.budget.timeout_s:g} s"
            why = (f"no progress reported within {t} of its start" if not a.samples else
                   f"no new step reported for {t} (last: step {a.samples[-1].step})")
            self.stop(a, ("no-progress", why), now)
        return False

    def stop(self, a: Attempt, verdict: tuple[Outcome, str], now: float) -> None:
        """SIGTERM to the command's group; SIGKILL after the grace period."""
        a.verdict, a.stop_at = verdict, now + self.budget.grace_s
        signal_group(a.proc.pid, signal.SIGTERM)

    def ended(self, a: Attempt, code: int) -> tuple[Outcome, str]:
        """Why a command that ended by itself did."""
        tail = _tail(a.log)
        if code != 0 and OOM.search(tail):
            return "out-of-memory", f"{exit_words(code)}: {_last_line(tail, OOM)}"
        if code != 0:
            last = _last_line(tail)
            return "crashed", exit_words(code) + (f": {last}" if last else "")
        if timing(a.samples, a.started, self.budget.skip) is None:
            return "no-progress", ("exited with code 0 before reporting a timed step"
                                   if a.samples else "exited with code 0 without reporting "
                                   "progress (CAMPAIGN_PROGRESS)")
        return "measured", ""

    def finish(self, a: Attempt) -> None:
        """Record the result of a command that has ended, and say it."""
        signal_group(a.proc.pid, signal.SIGKILL)  # whatever of its group outlived it
        assert a.verdict is not None
        outcome, reason = a.verdict
        t = timing(a.samples, a.started, self.budget.skip)
        if outcome == "measured" and t is None:
            outcome, reason = "no-progress", "no step was timed"
        if t is not None and not plausible(t):
            outcome, reason, t = "no-progress", ("its progress file's times are beyond any "
                                                 "real step (a time set far ahead?)"), None
        peak: int | None = a.reported_peak or None
        source: Literal["reported", "nvml"] | None = "reported" if peak else None
        if peak is None and a.watch is not None and a.watch.peak_bytes() is not None:
            peak, source = a.watch.peak_bytes(), "nvml"
        result = Result(a.run, outcome, reason, t, peak, source,
                        max(0.0, self.clock() - a.started), a.proc.returncode, a.log)
        self.results[a.run.id] = result
        self.say(self.line(result))

    def abandon(self) -> None:
        """Stop what still runs (an interrupt): SIGTERM, the grace period, SIGKILL."""
        if not self.active:
            return
        for a in self.active:
            signal_group(a.proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.budget.grace_s
        try:
            for a in self.active:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    a.proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:
            pass  # a second interrupt ends the grace period, never the stopping
        finally:
            for a in self.active:
                signal_group(a.proc.pid, signal.SIGKILL)
                a.proc.wait()
            self.active.clear()

    def line(self, r: Result) -> str:
        """One configuration's result in one line."""
        took = f"{r.wall_s:.1f} s"
        if r.outcome != "measured" or r.timing is None:
            return f"{r.run.variant}: {r.outcome}: {r.reason} (after {took}; log {r.log})"
        t = r.timing
        peak = (f", peak {r.peak_bytes / 2**30:.2f} GiB ({r.memory_source})"
                if r.peak_bytes else ", no peak memory")
        return (f"{r.run.variant}: {t.median_s:.4g} s/step (p10 {t.p10_s:.4g}, p90 "
                f"{t.p90_s:.4g}; {t.steps} steps timed), start-up {t.startup_s:.1f} s, "
                f"warm-up {t.warmup_s:.1f} s ({t.warmup_steps} steps){peak} [{took}]")

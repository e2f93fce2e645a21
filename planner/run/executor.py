"""The executor: runs a plan's runs on the machine's cards, journalling every change.

Runs start in plan order; a card that frees takes the next run that is ready (a robustness
evaluation is ready once the run it evaluates has finished). Each run is a process group
led by a small launcher (`shim.py`) that records its command's exit status, so a run
outlives an executor that dies and the next executor adopts it, or, when the run died too,
relaunches it from its latest checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from planner.errors import InputError
from planner.nofollow import LinkRefused
from planner.planfile.plan import Plan, Run
from planner.run.journal import History, Journal, RunRecord, Workspace
from planner.run.launch import go, spawn
from planner.run.once import done_words, read_done
from planner.run.params import check_manifest, run_fingerprint, write_manifest
from planner.run.procs import (
    alive,
    kill_leftovers,
    lock_path,
    ours,
    run_lock,
    signal_group,
)
from planner.run.progress import PROGRESS_EVERY_S, Sampler
from planner.run.resume import NONE, resume_from
from planner.run.sampling import Active, Sampling
from planner.run.status_render import span


class Executor:
    """One session of running a plan; the caller holds the lock and has opened the journal."""

    def __init__(self, plan: Plan, plan_path: Path, ws: Workspace, journal: Journal,
                 history: History, cards: list[int], *, poll: float = 1.0,
                 grace: float = 30.0, out: TextIO | None = None,
                 progress_every: float = PROGRESS_EVERY_S) -> None:
        self.plan, self.plan_path, self.ws = plan, plan_path, ws
        self.journal, self.history, self.cards = journal, history, cards
        self.poll, self.grace = poll, grace
        self.out = out or sys.stdout  # looked up now: a caller may have replaced it
        self.runs = {r.id: r for r in plan.runs}
        self.fps = {r.id: run_fingerprint(r) for r in plan.runs}
        self.active: dict[str, Active] = {}
        self.blocked: dict[str, str] = {}
        self.waiting: set[str] = set()
        """Runs whose lock another executor holds (started from another folder)."""
        self.not_before: dict[str, float] = {}
        """Runs whose launcher recorded no exit, and when they may be retried (back-off)."""
        self.stop_signal: int | None = None
        self.kill_now = False
        self.sampling = Sampling(Sampler(ws.workdir, progress_every), self.event,
                                 self.say)

    def say(self, message: str) -> None:
        print(f"{time.strftime('%H:%M:%S')}  {message}", file=self.out, flush=True)

    def record(self, run_id: str) -> RunRecord:
        """The run's record under its current parameters (fresh when they changed)."""
        rec = self.history.runs.get(run_id)
        if rec is None or (rec.fingerprint and rec.fingerprint != self.fps.get(run_id)):
            return RunRecord(run_id, attempts=rec.attempts if rec else 0)
        return rec

    def event(self, ev: str, **fields: Any) -> None:
        self.history.apply(self.journal.append(ev, **fields))

    def run(self) -> int:
        """Run until every run has finished or failed, or a signal stops it; the exit code."""
        previous = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT,
                                                                    signal.SIGTERM)}
        try:
            self.recover()
            while self.stop_signal is None:
                self.reap()
                self.observe()
                if self.stop_signal is None:
                    self.launch_ready()
                if not self.active and not self.waiting and not self.not_before:
                    break
                time.sleep(self.poll)
            if self.stop_signal is not None:
                self.stop()
        finally:
            for s, handler in previous.items():
                signal.signal(s, handler)
        return self.report()

    def _on_signal(self, signum: int, frame: object) -> None:
        # Only flags: the loop finishes whatever journal write it is in the middle of.
        if self.stop_signal is not None:
            self.kill_now = True
        self.stop_signal = signum

    def recover(self) -> None:
        """Settle runs an earlier executor left running: adopt, record, or mark interrupted."""
        for rid, rec in list(self.history.runs.items()):
            if rec.state != "running":
                continue
            run = self.runs.get(rid)
            token = rec.process.get("token") or ""
            if self.ws.exit_record(rid, rec.attempts, token).exists() or not alive(rec.process):
                if run is None:
                    self.event("exited", run=rid, attempt=rec.attempts, code=None,
                               outcome="interrupted")
                    continue
                left = Active(run, rec.attempts, rec.cards, rec.process, None,
                              rec.started or 0.0)
                # What it reported and saved since the last executor journalled it.
                self.sampling.sample(left, time.time(), final=True)
                self.finish(left)
            elif not ours(rec.process, rid, self.ws.workdir):
                # A line `run` cannot prove it wrote: the process it names is someone
                # else's, and the run's lock, not this line, keeps the run from running twice.
                self.say(f"left alone: pid {rec.process.get('pid')}, named for {rid} in the "
                         f"journal, is not a run this planner started here")
                self.event("exited", run=rid, attempt=rec.attempts, code=None,
                           outcome="interrupted", unproven=True)
            elif run is None or rec.fingerprint != self.fps[rid]:
                # Left running under parameters the accepted plan no longer has.
                self.say(f"stopping {rid}: it runs with parameters no longer in the plan")
                signal_group(rec.process["pid"], signal.SIGTERM)
                self.event("exited", run=rid, attempt=rec.attempts, code=None,
                           outcome="stopped")
            else:
                self.say(f"adopted {rid} (pid {rec.process['pid']}), still running from an "
                         f"earlier executor")
                self.active[rid] = Active(run, rec.attempts, rec.cards, rec.process, None,
                                          rec.started or 0.0, self.sampling.checkpoint_mtime(run))
        adopted = sum(a.proc is None for a in self.active.values())
        if adopted:
            # One line on what adopting means, whatever the lines above it said.
            them = ("1 run", "it", "its") if adopted == 1 else (f"{adopted} runs", "them",
                                                                "their")
            self.say(f"adopted {them[0]} still running from an earlier executor: not "
                     f"restarted, followed here to {them[2]} end (Ctrl-C stops {them[1]} too)")

    def dependency(self, run: Run) -> str:
        """`ok`, `wait`, or why the run can never start."""
        if not run.depends_on:
            return "ok"
        parent = run.depends_on
        rec = self.record(parent) if parent in self.runs else self.history.runs.get(parent)
        if rec is not None and rec.state == "finished":
            return "ok"
        if parent not in self.runs:
            return f"it evaluates {parent}, which is not in the plan and has not finished"
        if (rec is not None and rec.state == "failed") or parent in self.blocked:
            return f"it evaluates {parent}, which failed"
        return "wait"

    def launch_ready(self) -> None:
        """Start runs, in plan order, on the cards that are free."""
        busy = {c for a in self.active.values() for c in a.cards}
        free = [c for c in self.cards if c not in busy]
        for run in self.plan.runs:
            if not free:
                return
            if run.id in self.active or run.id in self.blocked:
                continue
            if self.not_before.get(run.id, 0.0) > time.time():
                continue
            self.not_before.pop(run.id, None)
            if self.record(run.id).state in ("finished", "failed"):
                continue
            why = self.dependency(run)
            if why == "wait":
                continue
            if why != "ok":
                self.blocked[run.id] = why
                self.say(f"not starting {run.id}: {why}")
                continue
            need = len(run.card)
            if need > len(free):
                return  # plan order: later runs do not jump ahead of a wider one
            try:
                lock = run_lock(self.ws.workdir, run)
            except LinkRefused as exc:
                self.blocked[run.id] = str(exc)
                self.say(f"refused: {exc}")
                continue
            if lock is None:
                if run.id not in self.waiting:
                    self.waiting.add(run.id)
                    self.say(f"waiting: {run.id} is running elsewhere (its lock "
                             f"{lock_path(self.ws.workdir, run)} is held)")
                continue
            self.waiting.discard(run.id)
            try:
                # Only now, with the lock held, is the done record final: a run that
                # finished elsewhere while this one waited is found here.
                if self._found_done(run):
                    continue
                take, free = free[:need], free[need:]
                self.launch(run, take, lock)
            except LinkRefused as exc:
                self.blocked[run.id] = str(exc)
                self.say(f"refused: {exc}")
            finally:
                os.close(lock)  # the launcher holds its own copy for the run's lifetime

    def _found_done(self, run: Run) -> bool:
        """Journal a run whose done record says it finished (from another working
        directory, plan copy or SLURM task, or before its exit could be journalled)."""
        record = read_done(self.ws.workdir, run, self.fps[run.id])
        if record is None:
            return False
        self.event("done", run=run.id, fingerprint=self.fps[run.id],
                   by=done_words(record))
        self.say(f"{run.id} finished before ({done_words(record)}): not run again")
        return True

    def launch(self, run: Run, cards: list[int], lock: int) -> None:
        try:
            self._launch(run, cards, lock)
        except OSError as exc:  # a full disk, a folder that cannot be made
            raise InputError(f"cannot start run {run.id}: {exc.strerror or exc}",
                             file=exc.filename or self.ws.workdir) from None

    def _launch(self, run: Run, cards: list[int], lock: int) -> None:
        wd = self.ws.workdir
        problem = check_manifest(wd, run)
        if problem:  # checked before the session too; this catches a folder changed since
            self.blocked[run.id] = problem
            self.say(f"refused: {problem}")
            return
        write_manifest(wd, run)
        # Where its checkpoint stands, read before its progress file goes with the attempt.
        expect = resume_from(run, self.record(run.id), wd)
        self.sampling.progress.forget(run)
        (wd / run.export_name).parent.mkdir(parents=True, exist_ok=True)
        attempt = self.record(run.id).attempts + 1
        s = spawn(self.ws, run, cards, attempt, lock, self.plan_path, self.plan.campaign.id,
                  self.plan.campaign.tracking)
        proc, process, resuming = s.proc, s.process, s.resuming
        self.event("started", run=run.id, attempt=attempt, cards=cards,
                   fingerprint=self.fps[run.id],
                   resume=str(wd / run.resume) if resuming else "", mode=s.mode, **process)
        go(proc)  # only now, with the start journalled, may the command begin
        self.active[run.id] = Active(run, attempt, cards, process, proc, time.time(),
                                     self.sampling.checkpoint_mtime(run),
                                     expect if resuming else NONE)
        how = f"resuming from {run.resume}" if resuming and run.kind == "train" else "fresh"
        self.say(f"started {run.id} on card {','.join(map(str, cards))} "
                 f"(attempt {attempt}, {how})")

    def _exit_code(self, a: Active) -> tuple[bool, int | None]:
        """(recorded, code): the launcher's record of how the command ended."""
        path = self.ws.exit_record(a.run.id, a.attempt, a.process.get("token") or "")
        try:
            return True, json.loads(path.read_text())["code"]
        except (OSError, ValueError, KeyError):
            return False, None

    def _done_record(self, run: Run) -> bool:
        try:
            return read_done(self.ws.workdir, run, self.fps[run.id]) is not None
        except LinkRefused:
            return False

    def reap(self) -> None:
        for a in list(self.active.values()):
            if a.proc is not None:
                if a.proc.poll() is None:
                    continue
            elif alive(a.process):
                continue
            self.sampling.sample(a, time.time(), final=True)
            self.finish(a)

    def finish(self, a: Active) -> None:
        """Record how an attempt ended, and whether the run is retried."""
        rid = a.run.id
        self.active.pop(rid, None)
        recorded, code = self._exit_code(a)
        if code != 0 and self._done_record(a.run):
            # The command completed and said so before its exit record was lost.
            recorded, code = True, 0
        if not recorded and isinstance(a.process.get("pid"), int):
            # The launcher died without a record: make sure nothing of the run lives on.
            kill_leftovers(a.process["pid"], rid, a.process.get("token") or "",
                           self.ws.workdir)
        if a.refused:
            self.say(f"{rid} failed: {a.refused}")
            self.event("exited", run=rid, attempt=a.attempt, code=code, outcome="failed",
                       reason=a.refused)
            return
        took = span(time.time() - a.started)
        unrecorded = not recorded and a.proc is not None and self.stop_signal is None
        if unrecorded and a.proc is not None:
            # A launcher of this executor ended without recording an exit (a full disk):
            # it counts as a try, retried after a back-off rather than at once and forever.
            status = a.proc.returncode
            code = status if status is not None and status > 0 else 125
        if code == 0:
            outcome = "finished"
            self.say(f"finished {rid} after {took}")
        elif code is None or self.stop_signal is not None:
            outcome = "stopped" if self.stop_signal is not None else "interrupted"
            self.say(f"{outcome} {rid} after {took}; it resumes from its latest checkpoint")
        else:
            failures = self.record(rid).failures + 1
            left = a.run.max_retries + 1 - failures
            outcome = "retry" if left > 0 else "failed"
            more = f"retrying ({left} more tr{'ies' if left > 1 else 'y'})" if left > 0 else \
                f"no retries left, marked failed; log: {self.ws.log(rid)}"
            if unrecorded:
                more += "; no exit record could be written (disk full?)"
                if left > 0:
                    self.not_before[rid] = time.time() + min(300.0, 2.0 ** failures)
            self.say(f"{rid} exited with code {code} after {took}: {more}")
        self.event("exited", run=rid, attempt=a.attempt, code=code, outcome=outcome)

    def observe(self) -> None:
        """Journal what each running run reports and saves (`Sampling.sample`)."""
        now = time.time()
        for a in list(self.active.values()):
            self.sampling.sample(a, now)

    def stop(self) -> None:
        """Stop every run's process group: SIGTERM, then SIGKILL after the grace period."""
        name = signal.Signals(self.stop_signal).name if self.stop_signal else "stop"
        self.event("stop", signal=name)
        if self.active:
            self.say(f"{name}: stopping {len(self.active)} run(s); SIGKILL in "
                     f"{span(self.grace)} (Ctrl-C again: now)")
        for a in self.active.values():
            self._signal(a, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        killed = False
        while self.active:
            self.reap()
            if self.active and not killed and (self.kill_now or time.monotonic() > deadline):
                for a in self.active.values():
                    self._signal(a, signal.SIGKILL)
                killed = True
            time.sleep(min(self.poll, 0.05))

    def _signal(self, a: Active, sig: signal.Signals) -> None:
        # A launcher of this executor is its child: its pid cannot be reused before it is
        # reaped. An adopted one is proven again, in case its pid has been reused since.
        if a.proc is not None or ours(a.process, a.run.id, self.ws.workdir):
            signal_group(a.process["pid"], sig)

    def report(self) -> int:
        states = [self.record(r.id).state for r in self.plan.runs]
        done, failed = states.count("finished"), states.count("failed")
        rest = len(states) - done - failed
        self.say(f"{done} finished, {failed} failed, {rest} not done "
                 f"({len(self.blocked)} cannot start) of {len(states)} runs; "
                 f"journal: {self.ws.journal}")
        if self.stop_signal:
            return 128 + self.stop_signal
        return 0 if done == len(states) else 1

"""The executor killed with SIGKILL at random moments, then restarted, again and again.

Two kinds of kill alternate at random: the executor alone (its runs live on and the next
executor adopts them), and the executor with every process of the campaign (a crash or a
reboot: the runs die too and resume from their latest checkpoints). After each campaign:
no finished run ran again, no run was lost, every restart of a run continued from its
checkpoint with identical parameters, and every final state equals an uninterrupted run's.

CAMPAIGN_KILLS (default 24, at most 3 per campaign) scales the soak; CAMPAIGN_KILL_SEED
picks the random moments.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import time
from collections import Counter
from pathlib import Path

from tests.run_fixtures import harness as h

KILLS = int(os.environ.get("CAMPAIGN_KILLS", "24"))
KILLS_PER_TRIAL = 3


def _kill(proc, workdir: Path, everything: bool) -> None:
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    if everything:  # the executor first, so nothing new starts while the rest dies
        # Killed again until none is left: a launcher the executor forked just before it
        # died may start its run's process after a listing (a loaded machine shows it).
        deadline = time.monotonic() + 30
        while pids := h.campaign_pids(workdir):
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            assert time.monotonic() < deadline, f"processes left: {pids}"
            time.sleep(0.02)


def _check(plan_path: Path, reference: dict[str, object], stats: Counter) -> None:
    workdir = plan_path.parent
    plan = h.load(plan_path)
    events = h.journal(workdir)
    assert h.exports(plan, workdir) == reference, "a final state differs from an uninterrupted run"
    for run in plan.runs:
        mine = [e for e in events if e.get("run") == run.id]
        finished = [e for e in mine if e["ev"] == "exited" and e["outcome"] == "finished"]
        assert len(finished) == 1, f"{run.id}: finished {len(finished)} times"
        done_attempt = finished[0]["attempt"]
        later = [e for e in mine if e["ev"] == "started" and e["attempt"] > done_attempt]
        assert not later, f"{run.id}: started again after it finished"
        stats["interrupted"] += sum(e["ev"] == "exited" and e["outcome"] == "interrupted"
                                    for e in mine)
    for run_id, trace in h.traces(plan, workdir).items():
        assert not [e for e in trace if e["ev"] in ("concurrent", "mismatch")], trace
        starts = [e for e in trace if e["ev"] == "start"]
        run = next(r for r in plan.runs if r.id == run_id)
        finished_attempt = next(e["attempt"] for e in events if e.get("run") == run_id
                                and e["ev"] == "exited" and e["outcome"] == "finished")
        # No start of the command after the attempt the journal records as finished.
        assert max(s["attempt"] for s in starts) == finished_attempt
        assert len({(s["fp"], s["seed"], tuple(sorted(s["params"].items()))) for s in starts}) == 1
        assert all(s["env_run"] == run_id and s["env_seed"] == str(run.seed) for s in starts)
        ckpt = 0
        for e in trace:
            if e["ev"] == "ckpt":
                ckpt = max(ckpt, e["step"])
            elif e["ev"] == "start":
                assert e["step"] >= ckpt, f"{run_id}: restarted at {e['step']} < {ckpt}"
                stats["resumed"] += e["step"] > 0
                stats["starts"] += 1
        ends = [e for e in trace if e["ev"] == "end"]
        assert ends and all(e["state"] == ends[0]["state"] for e in ends)


def _events(workdir: Path) -> int:
    try:
        return (workdir / "campaign-run" / "journal.jsonl").read_bytes().count(b"\n")
    except FileNotFoundError:
        return 0


def _acted(out: Path, said: int) -> bool:
    """Whether the executor started after line `said` of its output adopted or started a
    run (it has settled what the last one left)."""
    new = out.read_text().splitlines()[said:] if out.exists() else []
    return any(" adopted " in line or " started " in line for line in new)


def test_sigkill_at_random_moments(tmp_path: Path) -> None:
    # A relative gate: each run looks for it in its own working directory.
    plan_path = h.make_plan(tmp_path / "plan", h.preset(steps=40, every=4, gate=Path("gate")))
    plan = h.load(plan_path)
    ref_dir = tmp_path / "reference"
    ref_dir.mkdir()
    h.copy_plan(plan_path, ref_dir / "plan.toml")
    (ref_dir / "gate").touch()
    assert h.start(ref_dir / "plan.toml").wait(300) == 0
    reference = h.exports(plan, ref_dir)
    for run in plan.runs:  # the uninterrupted run is the script's own pure computation
        if run.kind == "train":
            assert reference[run.id]["state"] == h.expected(run)
    rng = random.Random(int(os.environ.get("CAMPAIGN_KILL_SEED", "6")))
    stats: Counter = Counter()
    trial = 0
    while stats["kills"] < KILLS:
        trial += 1
        assert trial <= KILLS, "the executor keeps finishing before any kill"
        workdir = tmp_path / f"trial{trial}"
        workdir.mkdir()
        h.copy_plan(plan_path, workdir / "plan.toml")
        trial_plan = workdir / "plan.toml"
        out = workdir / "executor.out"
        hold = False
        for _ in range(min(KILLS_PER_TRIAL, KILLS - stats["kills"])):
            # A closed gate holds runs at their first checkpoint: what an executor killed
            # alone leaves running is still running when the next one looks.
            if hold:
                (workdir / "gate").unlink(missing_ok=True)
            else:
                (workdir / "gate").touch()
            # The moment is picked by progress, not by a clock: after a random number of
            # further journal events (held: once the executor has adopted or started a
            # run), however slow or loaded the machine.
            target = _events(workdir) + rng.randint(1, 14)
            said = out.read_text().count("\n") if out.exists() else 0
            proc = h.start(trial_plan, out=out)
            while proc.poll() is None and not (
                    _acted(out, said) if hold else _events(workdir) >= target):
                time.sleep(0.005)
            if proc.poll() is not None:
                break
            everything = rng.random() < 0.5
            _kill(proc, workdir, everything)
            stats["kills"] += 1
            stats["kills_everything" if everything else "kills_executor_only"] += 1
            hold = not everything or rng.random() < 0.5
        (workdir / "gate").touch()
        final = h.start(trial_plan, out=out)
        assert final.wait(300) == 0, (workdir / "executor.out").read_text()[-2000:]
        h.wait_gone(workdir)
        _check(trial_plan, reference, stats)
        stats["adopted"] += (workdir / "executor.out").read_text().count(" adopted ")
    print(f"\nkill trials: {trial} campaigns, {dict(stats)}")
    assert stats["resumed"] > 0 and stats["adopted"] > 0


def _all_events(workdirs: list[Path]) -> int:
    return sum(_events(w) for w in workdirs)


def test_sigkill_with_a_second_executor_and_workdir(tmp_path: Path) -> None:
    """Two executors, each with its own working directory, over one absolute checkpoint
    and export root, killed at random moments (alone, or with every process of their
    working directory: one machine of two crashing) and restarted: no run starts again
    once its done record is written, and none is lost."""
    rng = random.Random(int(os.environ.get("CAMPAIGN_KILL_SEED", "6")) + 1)
    trials = max(3, KILLS // 8)
    stats: Counter = Counter()
    for trial in range(trials):
        root = tmp_path / f"trial{trial}"
        data = h.preset(steps=24, every=4)
        data["ablation"]["checkpoint_root"] = str(root / "ckpt")
        data["ablation"]["export_root"] = str(root / "exports")
        plan_path = h.make_plan(root / "a", data)
        workdirs = [plan_path.parent, root / "b"]
        outs = [root / "a.out", root / "b.out"]

        def start(k: int, plan_path: Path = plan_path, workdirs: list[Path] = workdirs,
                  outs: list[Path] = outs) -> subprocess.Popen[bytes]:
            extra = ("--workdir", str(workdirs[1])) if k else ()
            return h.start(plan_path, *extra, out=outs[k])

        procs = [start(0), start(1)]
        for _ in range(KILLS_PER_TRIAL):
            target = _all_events(workdirs) + rng.randint(1, 14)
            while (any(p.poll() is None for p in procs)
                   and _all_events(workdirs) < target):
                time.sleep(0.005)
            live = [k for k, p in enumerate(procs) if p.poll() is None]
            if not live:
                break
            k = rng.choice(live)
            everything = rng.random() < 0.5
            _kill(procs[k], workdirs[k], everything)
            stats["kills"] += 1
            stats["kills_everything" if everything else "kills_executor_only"] += 1
            procs[k] = start(k)
        for k, p in enumerate(procs):
            assert p.wait(300) == 0, outs[k].read_text()[-2000:]
        for w in workdirs:
            h.wait_gone(w)
        plan = h.load(plan_path)
        starts: list[tuple[str, float]] = []
        for w in workdirs:
            starts += [(e["run"], e["t"]) for e in h.journal(w) if e["ev"] == "started"]
        for run in plan.runs:
            done = json.loads(h.done_record(plan_path.parent, run).read_text())  # not lost
            again = [t for rid, t in starts if rid == run.id and t > done["finished"]]
            assert not again, f"{run.id} started again after its done record"
            export = json.loads(Path(f"{run.export_name}.json").read_text())
            if run.kind == "train":
                assert export["state"] == h.expected(run)
                trace = h.traces(plan, plan_path.parent)[run.id]
                assert not [e for e in trace if e["ev"] in ("concurrent", "mismatch")]
            for w in workdirs:  # both journals end with every run finished
                recs = [e for e in h.journal(w) if e.get("run") == run.id
                        and (e["ev"] == "done" or e.get("outcome") == "finished")]
                assert recs, f"{run.id}: not finished in the journal of {w}"
        stats["found_done"] += sum(o.read_text().count("finished before") for o in outs)
        stats["runs"] += len(plan.runs)
    print(f"\nkill trials, two executors: {trials} campaigns, {dict(stats)}")
    assert stats["kills"] > 0 and stats["found_done"] > 0

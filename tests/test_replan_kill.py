"""Kill and replan: the executor killed with SIGKILL at random moments (alone, or with every
process of the campaign), a replan made after each kill, and the next session run on that
revision. After each campaign: no run ran again after it finished, none was lost, and every
final state equals an uninterrupted run's.

CAMPAIGN_REPLAN_KILLS (default 6, at most 3 per campaign) scales the soak;
CAMPAIGN_KILL_SEED picks the random moments.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path

from tests.run_fixtures import harness as h
from tests.test_run_kill import _check, _events, _kill

KILLS = int(os.environ.get("CAMPAIGN_REPLAN_KILLS", "6"))


def _replan(plan: Path, workdir: Path, out: Path) -> Path:
    r = h.cli("replan", str(plan), "--workdir", str(workdir), "--out", str(out), "--json")
    assert r.returncode == 0, r.stderr
    result = json.loads(r.stdout)
    assert not result["dropped"], result["dropped"]  # a three-day window holds everything
    return out / "plan.toml"


def test_kill_and_replan(tmp_path: Path) -> None:
    plan_path = h.make_plan(tmp_path / "plan", h.preset(steps=24, every=4))
    plan = h.load(plan_path)
    ref_dir = tmp_path / "reference"
    ref_dir.mkdir()
    h.copy_plan(plan_path, ref_dir / "plan.toml")
    assert h.start(ref_dir / "plan.toml").wait(300) == 0
    reference = h.exports(plan, ref_dir)
    rng = random.Random(int(os.environ.get("CAMPAIGN_KILL_SEED", "23")))
    stats: Counter = Counter()
    trial = 0
    while stats["kills"] < KILLS:
        trial += 1
        assert trial <= 2 * KILLS, "the executor keeps finishing before any kill"
        workdir = tmp_path / f"trial{trial}"
        workdir.mkdir()
        h.copy_plan(plan_path, workdir / "plan.toml")
        current = workdir / "plan.toml"
        out = workdir / "executor.out"
        for k in range(min(3, KILLS - stats["kills"])):
            target = _events(workdir) + rng.randint(1, 12)
            proc = h.start(current, "--workdir", str(workdir), "--progress-every", "0",
                           out=out)
            while proc.poll() is None and _events(workdir) < target:
                time.sleep(0.005)
            if proc.poll() is not None:
                break
            everything = rng.random() < 0.5
            _kill(proc, workdir, everything)
            stats["kills"] += 1
            current = _replan(current, workdir, workdir / f"rev{k + 1}")
            stats["revisions"] += 1
        final = h.start(current, "--workdir", str(workdir), out=out)
        assert final.wait(300) == 0, out.read_text()[-2000:]
        h.wait_gone(workdir)
        # The original plan's runs, as the campaign's full list: none lost, none rerun.
        h.copy_plan(plan_path, workdir / "original.toml")
        _check(workdir / "original.toml", reference, stats)
        switches = [e for e in h.journal(workdir) if e["ev"] == "plan"]
        assert [e.get("revision", 0) for e in switches] == list(range(len(switches)))
    print(f"\nkill-and-replan trials: {trial} campaigns, {dict(stats)}")
    assert stats["revisions"] == stats["kills"] == KILLS

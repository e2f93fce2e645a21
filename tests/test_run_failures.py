"""A failing run is retried up to its limit, then marked failed; the others go on."""

from __future__ import annotations

import json
from pathlib import Path

from tests.run_fixtures import harness as h


def test_failing_run_is_retried_then_failed_and_the_others_finish(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), max_retries=2, robustness=["baseline", "broken", "flaky"],
                    variants={"broken": {"crash": "always"}, "flaky": {"crash": "once"}})
    plan_path = h.make_plan(tmp_path / "p", data)
    wd, plan = plan_path.parent, h.load(plan_path)
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    ids = {r.variant + ("-eval" if r.depends_on else ""): r.id for r in plan.runs}
    events = h.journal(wd)

    def outcomes(run_id: str) -> list[str]:
        return [e["outcome"] for e in events if e["ev"] == "exited" and e["run"] == run_id]

    assert outcomes(ids["broken"]) == ["retry", "retry", "failed"]  # 1 try + 2 retries
    assert outcomes(ids["flaky"]) == ["retry", "finished"]
    assert outcomes(ids["baseline"]) == ["finished"]
    assert outcomes(ids["flaky-eval"]) == ["finished"]
    assert outcomes(ids["broken-eval"]) == []  # never started: what it evaluates failed
    assert f"not starting {ids['broken-eval']}: it evaluates {ids['broken']}, which failed" \
        in proc.stdout
    # Each retry resumed from the checkpoint the failed attempt left.
    trace = h.traces(plan, wd)[ids["broken"]]
    assert [e["step"] for e in trace if e["ev"] == "start"] == [0, 15, 15]
    flaky = [e["step"] for e in h.traces(plan, wd)[ids["flaky"]] if e["ev"] == "start"]
    assert flaky == [0, 15]
    status = json.loads(h.cli("status", str(plan_path), "--json").stdout)
    assert status["counts"] == {"done": 4, "running": 0, "pending": 0, "failed": 1,
                                "blocked": 1}
    failed = next(r for r in status["runs"] if r["id"] == ids["broken"])
    assert failed["exit_code"] == 3 and failed["attempts"] == 3
    text = h.cli("status", str(plan_path)).stdout
    assert "exit code 3" in text and "1 failed" in text

    # Running again leaves a failed run failed...
    again = h.cli("run", str(plan_path), "--poll", "0.02")
    assert again.returncode == 1 and "started" not in again.stdout
    # ...unless asked to give it fresh retries.
    again = h.cli("run", str(plan_path), "--poll", "0.02", "--retry-failed")
    assert again.returncode == 1
    assert outcomes(ids["broken"]) == ["retry", "retry", "failed"]  # the old list, re-read
    assert [e["outcome"] for e in h.journal(wd) if e["ev"] == "exited"
            and e["run"] == ids["broken"]][3:] == ["retry", "retry", "failed"]


def test_a_command_that_cannot_start_fails_cleanly(tmp_path: Path) -> None:
    data = h.preset(seeds=(0,), variants={}, robustness=[], max_retries=0)
    data["ablation"]["command"] = "/nonexistent/program --run-id {run_id}"
    plan_path = h.make_plan(tmp_path / "p", data)
    proc = h.cli("run", str(plan_path), "--poll", "0.02")
    assert proc.returncode == 1
    run = h.load(plan_path).runs[0]
    log = (plan_path.parent / "campaign-run" / "logs" / f"{run.id}.log").read_text()
    assert "cannot start '/nonexistent/program'" in log
    assert "exited with code 127" in proc.stdout

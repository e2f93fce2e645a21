"""The parts of a trial that need no running command: step-time statistics from given
samples, the progress file's optional fields, and NVML through a stand-in module."""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from planner.campaign.trial import trial_runs
from planner.run.progress import read_report, read_step
from planner.run.trial import Attempt, Budget, Trial, exit_words, trial_env
from planner.run.trial_device import MemoryWatch, describe, open_nvml
from planner.run.trial_stats import (
    Sample,
    intervals,
    percentile,
    plausible,
    timed_start,
    timing,
)
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset

GIB = 2**30


def test_percentiles_of_repeated_values_match_numpys() -> None:
    np = pytest.importorskip("numpy")
    values = [(0.5, 3), (0.1, 1), (0.3, 2), (0.2, 4)]
    flat = [v for v, n in values for _ in range(n)]
    for q in (0, 10, 37.5, 50, 90, 100):
        assert percentile(values, q) == pytest.approx(float(np.percentile(flat, q)))
    with pytest.raises(ValueError):
        percentile([], 50)


def test_warm_up_is_never_timed() -> None:
    # Start-up to t=10; steps 1-2 reported as warm-up; then one step per second, except a
    # slow stretch of 2 steps in 5 s.
    samples = [Sample(10.0, 1, True), Sample(12.0, 2, True), Sample(13.0, 3),
               Sample(14.0, 4), Sample(15.0, 5), Sample(20.0, 7), Sample(21.0, 8)]
    assert timed_start(samples, 0) == 2 and timed_start(samples, 1) == 3
    assert intervals(samples, 0) == [(1.0, 1), (1.0, 1), (2.5, 2), (1.0, 1)]
    t = timing(samples, 4.0, 0)
    assert t is not None
    assert (t.steps, t.median_s, t.startup_s, t.warmup_s, t.warmup_steps) == (5, 1.0, 6.0,
                                                                              3.0, 3)
    assert t.p10_s == 1.0 and t.p90_s == pytest.approx(2.5)
    assert t.overhead_s == pytest.approx(13.0 - 4.0 - 3 * 1.0)  # what the steps don't explain
    # One more step dropped after the warm-up: the timing starts at step 4.
    skipped = timing(samples, 4.0, 1)
    assert skipped is not None and (skipped.steps, skipped.warmup_steps) == (4, 4)
    # Nothing timed yet: warm-up only, or a single report after it.
    assert timing(samples[:2], 4.0, 0) is None and timing(samples[:3], 4.0, 0) is None


def test_reports_of_one_clock_tick_merge_and_a_restart_ends_the_timing() -> None:
    samples = [Sample(1.0, 1), Sample(1.0, 3), Sample(2.0, 5), Sample(3.0, 6),
               Sample(3.5, 2), Sample(9.0, 9)]
    assert intervals(samples, 0) == [(0.25, 4), (1.0, 1)]


@pytest.mark.parametrize("content, fields", [
    (b'{"step": 7, "peak_memory_bytes": 1024, "warmup": true, "checkpoint_step": 5}',
     (7, 1024, True, 5)),
    (b'{"step": 7, "peak_memory_bytes": "lots", "warmup": "yes", "checkpoint_step": -1}',
     (7, None, False, None)),
    (b'{"step": 7, "peak_memory_bytes": true, "extra": [1, 2]}', (7, None, False, None)),
    (b'{"step": 7, "peak_memory_bytes": 576460752303423488}', (7, None, False, None)),
])
def test_optional_fields_are_read_and_a_bad_one_is_dropped(tmp_path: Path, content: bytes,
                                                           fields: tuple[Any, ...]) -> None:
    path = tmp_path / "p.json"
    path.write_bytes(content)
    r = read_report(path)
    assert r is not None
    assert (r.step, r.peak_memory_bytes, r.warmup, r.checkpoint_step) == fields
    assert r.mtime == path.stat().st_mtime and read_step(path) == 7
    path.write_bytes(b'{"warmup": true}')
    assert read_report(path) is None


class FakeNvml(types.SimpleNamespace):
    """A stand-in for the `pynvml` module: one RTX A6000 whose used memory climbs from
    1 GiB (before the trial) by 1 GiB per reading, up to 4 GiB."""

    class NVMLError(Exception):
        pass

    def __init__(self, cards: int = 1) -> None:
        super().__init__(cards=cards, reads=0, shut=False)

    def nvmlInit(self) -> None:
        pass

    def nvmlShutdown(self) -> None:
        self.shut = True

    def nvmlDeviceGetCount(self) -> int:
        return self.cards

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetName(self, h: int) -> bytes:
        return b"NVIDIA RTX A6000"

    def nvmlDeviceGetCudaComputeCapability(self, h: int) -> tuple[int, int]:
        return 8, 6

    def nvmlDeviceGetMemoryInfo(self, h: int) -> types.SimpleNamespace:
        used = min(4, 1 + self.reads) * GIB
        self.reads += 1
        return types.SimpleNamespace(total=48 * GIB, used=used)


def test_nvml_names_the_card_and_samples_its_memory() -> None:
    api = FakeNvml()
    nvml = open_nvml(api)
    assert nvml is not None
    device = describe(nvml, [0], load_catalog(None))
    assert (device.kind, device.name, device.card) == ("cuda", "NVIDIA RTX A6000", "a6000")
    assert device.compute_capability == "8.6" and device.memory_gib == 48.0
    api.reads = 0
    watch = MemoryWatch(nvml, [0])  # 1 GiB in use before
    for _ in range(5):
        watch.sample()
    assert watch.peak_bytes() == 3 * GIB
    nvml.close()
    assert api.shut
    assert open_nvml(FakeNvml(cards=0)) is None
    assert describe(None, [], load_catalog(None)).kind == "cpu"


SILENT_ON_MEMORY = """
import json, os, time
path = os.environ["CAMPAIGN_PROGRESS"]
for step in range(1, 10**6):
    time.sleep(0.01)
    with open(path + ".tmp", "w") as f:
        json.dump({"step": step}, f)
    os.replace(path + ".tmp", path)
"""


def test_a_card_trial_without_reported_memory_takes_nvmls(tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(SILENT_ON_MEMORY)
    preset_path = tmp_path / "p.toml"
    preset_path.write_text(f"""
[campaign]
name = "nvml-test"
kind = "ablation"
window_days = 3
card = "a6000"
cards = 1
[ablation]
steps = 100
seeds = [3]
micro_batch = 2
command = "{sys.executable} {script} {{checkpoint_dir}}"
[ablation.baseline]
factors = {{ lr = "0.1" }}
step_time_s = {{ value = 1.0, source = "entered" }}
peak_memory_gib = {{ value = 10.0, source = "entered" }}
[order]
cuda = "12.6"
pytorch = "2.7"
""")
    preset, source = load_preset(str(preset_path))
    scratch = tmp_path / "trial-x"
    runs = trial_runs(preset, load_catalog(None), checkpoint_root=str(scratch / "ck"),
                      export_root=str(scratch / "ex"), source=source)
    assert len(runs) == 1 and runs[0].id.endswith("-baseline-s3")
    assert runs[0].argv[-1] == str(scratch / "ck" / runs[0].id)
    budget = Budget(steps=3, skip=0, grace_s=5, poll_s=0.02)
    env = trial_env(runs[0], scratch, [0], "cid", budget)
    assert env["CUDA_VISIBLE_DEVICES"] == "0" and env["CAMPAIGN_TRIAL_STEPS"] == "3"
    assert env["CAMPAIGN_PLAN"] == "" and env["CAMPAIGN_WORKDIR"] == str(scratch)
    lines: list[str] = []
    nvml = open_nvml(FakeNvml())
    results = Trial(runs, [[0]], workdir=tmp_path, scratch=scratch, campaign_id="cid",
                    budget=budget, nvml=nvml, say=lines.append).run()
    (r,) = results
    assert r.outcome == "measured" and r.memory_source == "nvml"
    assert r.peak_bytes is not None and 0 < r.peak_bytes <= 3 * GIB
    assert lines[0] == "baseline: starting on card 0 (1/1)"
    assert "(nvml)" in lines[1]
    reported = json.loads((scratch / "ck" / runs[0].id / f"{runs[0].id}.progress.json")
                          .read_text())
    assert reported["step"] >= 3


def test_exit_words() -> None:
    assert exit_words(3) == "exited with code 3"
    assert exit_words(-9) == "killed by SIGKILL"


def _runs(tmp_path: Path, variants: int = 0) -> tuple[list[Any], Path]:
    script = tmp_path / "train.py"
    script.write_text(SILENT_ON_MEMORY + "\n")
    more = "".join(f"""
[[ablation.variants]]
name = "v{i}"
changes = {{ lr = "0.{i + 2}" }}
step_time_s = {{ value = 1.0, source = "entered" }}
peak_memory_gib = {{ value = 10.0, source = "entered" }}
""" for i in range(variants))
    path = tmp_path / "p.toml"
    path.write_text(f"""
[campaign]
name = "units"
kind = "ablation"
window_days = 3
card = "a6000"
cards = 2
[ablation]
steps = 100
seeds = [0]
micro_batch = 2
command = "{sys.executable} {script} {{overrides}}"
[ablation.baseline]
factors = {{ lr = "0.1" }}
step_time_s = {{ value = 1.0, source = "entered" }}
peak_memory_gib = {{ value = 10.0, source = "entered" }}
{more}
[order]
cuda = "12.6"
pytorch = "2.7"
""")
    preset, source = load_preset(str(path))
    scratch = tmp_path / "trial-u"
    return trial_runs(preset, load_catalog(None), checkpoint_root=str(scratch / "ck"),
                      export_root=str(scratch / "ex"), source=source), scratch


def test_several_card_groups_take_configurations_side_by_side(tmp_path: Path) -> None:
    runs, scratch = _runs(tmp_path, variants=2)
    lines: list[str] = []
    results = Trial(runs, [[0], [1]], workdir=tmp_path, scratch=scratch, campaign_id="c",
                    budget=Budget(steps=2, skip=0, grace_s=5, poll_s=0.02),
                    nvml=open_nvml(FakeNvml(cards=2)), say=lines.append).run()
    assert [r.outcome for r in results] == ["measured"] * 3
    # Both groups start one before either ends; the third waits for a free group.
    assert lines[:2] == ["baseline: starting on card 0 (1/3)", "v0: starting on card 1 (2/3)"]
    third = next(i for i, line in enumerate(lines) if line.startswith("v1: starting on card"))
    assert third >= 3 and "s/step" in lines[2]


def test_an_interrupt_stops_the_command(tmp_path: Path) -> None:
    runs, scratch = _runs(tmp_path)
    calls = 0

    def clock() -> float:  # the trial's clock, interrupted at its fifth reading
        nonlocal calls
        calls += 1
        if calls == 5:
            raise KeyboardInterrupt
        return float(calls)

    class Watched(Trial):
        seen: list[Any] = []

        def start(self, run: Any, group: list[int]) -> bool:
            ok = super().start(run, group)
            self.seen.extend(a.proc for a in self.active)
            return ok

    trial = Watched(runs, [[]], workdir=tmp_path, scratch=scratch, campaign_id="c",
                    budget=Budget(steps=10**6, grace_s=5, poll_s=0.02), clock=clock)
    with pytest.raises(KeyboardInterrupt):
        trial.run()
    assert trial.active == [] and len(trial.seen) == 1
    proc = trial.seen[0]
    assert proc.returncode is not None
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # nothing of its group is left


def test_a_budget_in_minutes_counts_from_the_first_timed_report(tmp_path: Path) -> None:
    runs, scratch = _runs(tmp_path)
    trial = Trial(runs, [[]], workdir=tmp_path, scratch=scratch, campaign_id="c",
                  budget=Budget(minutes=1.0, skip=1))
    attempt = types.SimpleNamespace(samples=[Sample(100.0, 1, True), Sample(110.0, 2),
                                             Sample(111.0, 3)])
    assert not trial.met(attempt, 170.0)  # type: ignore[arg-type]
    assert trial.met(attempt, 171.0)  # type: ignore[arg-type]


def test_a_command_that_cannot_start_is_marked_and_the_next_runs(tmp_path: Path) -> None:
    runs, scratch = _runs(tmp_path, variants=1)
    runs[0] = runs[0].model_copy(update={"argv": [str(tmp_path / "no-such-program")]})
    lines: list[str] = []
    results = Trial(runs, [[]], workdir=tmp_path, scratch=scratch, campaign_id="c",
                    budget=Budget(steps=2, skip=0, grace_s=5, poll_s=0.02),
                    say=lines.append).run()
    assert [r.outcome for r in results] == ["crashed", "measured"]
    assert results[0].reason.startswith("cannot start ") and results[0].log.is_file()
    assert lines[2] == "v0: starting on the CPU (2/2)"


def test_a_progress_file_dated_far_ahead_gives_no_figure() -> None:
    now = 1_700_000_000.0
    honest = timing([Sample(now + 1, 1), Sample(now + 2, 3), Sample(now + 3, 5)], now, 1)
    assert honest is not None and plausible(honest)
    ahead = timing([Sample(now + 1e9, 1), Sample(now + 1e9 + 1, 3), Sample(now + 1e9 + 2, 5)],
                   now, 1)
    assert ahead is not None and not plausible(ahead)  # start-up of 30 years


def test_a_second_interrupt_kills_what_ignores_sigterm_at_once(tmp_path: Path) -> None:
    """Ctrl-C twice: the second ends the grace period; nothing of the command outlives it."""
    runs, scratch = _runs(tmp_path)
    trial = Trial(runs, [[]], workdir=tmp_path, scratch=scratch, campaign_id="c",
                  budget=Budget(steps=2, grace_s=3600, poll_s=0.02))
    # A command that ignores SIGTERM and forks a child that does too.
    script = "trap '' TERM; sh -c \"trap '' TERM; while :; do sleep 1; done\" & echo $!; wait"
    proc = subprocess.Popen(["sh", "-c", script], start_new_session=True,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    child = os.pidfd_open(int(proc.stdout.readline()))  # readable once it has ended
    interrupted = []

    def wait(timeout: float | None = None) -> int:
        if timeout is not None and not interrupted:
            interrupted.append(timeout)
            raise KeyboardInterrupt  # the second Ctrl-C, during the grace period
        return subprocess.Popen.wait(proc, timeout)

    proc.wait = wait  # type: ignore[method-assign]
    trial.active.append(Attempt(runs[0], [], proc, tmp_path / "log", 0.0, 0.0, None))
    trial.abandon()
    assert interrupted and trial.active == [] and proc.returncode is not None
    proc.stdout.close()
    # Killed, not left running past the trial: it ends without anything else sent to it.
    assert select.select([child], [], [], 60)[0] == [child]
    os.close(child)

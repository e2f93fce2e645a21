"""`campaign-planner trial`: each configuration's own command, timed from the progress it
reports, into a measurements file the plan reads; a crash, a silence, an out-of-memory error
marked; bad arguments refused before anything starts."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.campaign import plan_campaign
from planner.cli.main import main
from planner.figures.measurements import load_measurements
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset

FAKE = '''
import json, os, sys, time
args = dict(a.split("=", 1) for a in sys.argv[2:] if "=" in a)
mode = args.get("mode", "ok")
trace = sys.argv[1]
env = {k: v for k, v in os.environ.items() if k.startswith("CAMPAIGN_")}
env["cwd"] = os.getcwd()
env["pid"] = os.getpid()
with open(os.path.join(trace, args.get("name", mode) + ".json"), "w") as f:
    json.dump(env, f)
path = os.environ["CAMPAIGN_PROGRESS"]

def report(step, **extra):
    with open(path + ".tmp", "w") as f:
        json.dump({"step": step, **extra}, f)
    os.replace(path + ".tmp", path)

if mode == "silent":
    time.sleep(3600)
if mode == "oom":
    print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
          file=sys.stderr)
    sys.exit(1)
if mode == "escape":
    print("\\x1b[31mred\\x1b]0;a title\\x07 failure\\r", flush=True)
    sys.exit(1)
peak = {"ok": 3 * 2**30, "big": 5 * 2**30, "bytes-as-bits": 2**59}.get(mode)
for step in range(1, 10**6):
    time.sleep(0.01)
    if mode == "raise" and step == 3:
        raise ValueError("boom at step 3")
    extra = {"peak_memory_bytes": peak} if peak else {}
    report(step, warmup=step <= 2, **extra)
'''


def _preset(tmp_path: Path, variants: dict[str, str]) -> Path:
    script = tmp_path / "fake_train.py"
    script.write_text(FAKE)
    trace = tmp_path / "trace"
    trace.mkdir()
    figure = {"value": 1.0, "source": "entered"}
    memory = {"value": 10.0, "source": "entered"}
    data: dict[str, Any] = {
        "campaign": {"name": "trial-test", "kind": "ablation", "window_days": 3,
                     "card": "a6000", "cards": 2},
        "overheads": {"startup_minutes": 5.0},
        "ablation": {
            "steps": 1000, "seeds": [0, 1], "micro_batch": 4,
            "command": f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} "
                       f"{shlex.quote(str(trace))} --ckpt {{checkpoint_dir}} {{overrides}}",
            "baseline": {"factors": {"mode": "ok", "lr": "0.1"}, "step_time_s": figure,
                         "peak_memory_gib": memory},
            "variants": [{"name": name, "changes": {"mode": mode}, "step_time_s": figure,
                          "peak_memory_gib": memory} for name, mode in variants.items()],
        },
        "order": {"cuda": "12.6", "pytorch": "2.7"},
    }
    path = tmp_path / "preset.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def _trial(tmp_path: Path, preset: Path, *extra: str) -> int:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    return main(["trial", "--preset", str(preset), "--device", "cpu", "--workdir", str(work),
                 "--grace", "5", *extra])


def _scratch(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "work").glob("trial-*"))


def test_a_trial_writes_measurements_the_plan_reads(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {"wide": "big"})
    out = tmp_path / "m.toml"
    assert _trial(tmp_path, preset, "--steps", "5", "--warmup", "1", "--out", str(out)) == 0
    printed = capsys.readouterr().out
    assert "baseline: starting on the CPU (1/2)" in printed
    assert "wide: " in printed and "s/step" in printed
    m = load_measurements(out)
    assert m.workload.source == "trial" and m.device.kind == "cpu"
    assert m.device.name.startswith("CPU")
    assert [c.config for c in m.configs] == ["baseline", "wide"]
    for c, gib in zip(m.configs, (3.0, 5.0), strict=True):
        assert c.outcome == "measured" and c.step_time is not None
        assert c.step_time.steps >= 5 and c.step_time.p10_s <= c.step_time.median_s
        assert c.step_time.median_s <= c.step_time.p90_s
        assert c.memory is not None and c.memory.method == "reported"
        assert c.memory.peak_gib == gib
        assert c.trial is not None and c.trial.startup_s is not None
        assert c.trial.warmup_steps >= 3  # two reported warm-up steps, one more dropped
    assert _scratch(tmp_path) == []  # every configuration measured: the folder is gone
    # The command ran as `run` starts it, in the workdir, with its files in the scratch.
    env = json.loads((tmp_path / "trace" / "ok.json").read_text())
    assert env["cwd"] == str(tmp_path / "work")
    assert env["CAMPAIGN_TRIAL"] == "1" and env["CAMPAIGN_TRIAL_STEPS"] == "6"
    assert env["CAMPAIGN_RUN_ID"].endswith("-baseline-s0") and env["CAMPAIGN_RESUME"] == ""
    ckpt = Path(env["CAMPAIGN_CHECKPOINT_DIR"])
    assert ckpt.parent.parent.name.startswith("trial-trial-test-")
    assert ckpt.parent.parent.parent == tmp_path / "work"
    assert Path(env["CAMPAIGN_PROGRESS"]).parent == ckpt
    assert Path(env["CAMPAIGN_WORKDIR"]) == ckpt.parent.parent
    assert not (tmp_path / "work" / "checkpoints").exists()
    # Planned from, the figures say they come from the trial of the command.
    loaded, source = load_preset(str(preset))
    plan = plan_campaign(loaded, load_catalog(None), measurements=m, source=source,
                         cpu_step_times=True)
    figs = {f.config: f for f in plan.assumptions.figures}
    assert figs["wide"].step_time_s.label().endswith("(trial of the command)")
    assert figs["wide"].peak_memory_gib.value == 5.0
    assert plan.assumptions.measured_configs == ["baseline", "wide"]
    worst = max(c.trial.overhead_s or 0.0 for c in m.configs if c.trial)
    assert plan.assumptions.overheads.startup_minutes == round(worst / 60, 3)
    assert any(d.startswith("start-up ") for d in plan.decisions)
    # Without the CPU's step times, a CPU trial is a smoke test: start-up is the preset's.
    smoke = plan_campaign(loaded, load_catalog(None), measurements=m, source=source)
    assert smoke.assumptions.overheads.startup_minutes == 5.0
    capsys.readouterr()
    assert main(["--preset", str(preset), "--measurements", str(out)]) == 0


def test_crash_silence_and_out_of_memory_are_marked(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {"boom": "raise", "hang": "silent", "oom": "oom"})
    out = tmp_path / "m.toml"
    rc = _trial(tmp_path, preset, "--steps", "3", "--timeout", "3", "--out", str(out))
    printed = capsys.readouterr().out
    assert rc == 1
    m = load_measurements(out)
    got = {c.config: (c.outcome, c.reason) for c in m.configs}
    assert got["baseline"] == ("measured", "")
    assert got["boom"][0] == "crashed" and "ValueError: boom at step 3" in got["boom"][1]
    assert got["hang"] == ("no-progress", "no progress reported within 3 s of its start")
    assert got["oom"][0] == "out-of-memory" and "CUDA out of memory" in got["oom"][1]
    for c in m.configs[1:]:
        assert c.step_time is None and c.memory is None
        assert c.trial is not None and Path(c.trial.log).is_file()
    assert "boom: crashed: exited with code 1: ValueError: boom at step 3" in printed
    assert len(_scratch(tmp_path)) == 1  # kept: the logs say why
    loaded, source = load_preset(str(preset))
    plan = plan_campaign(loaded, load_catalog(None), measurements=m, source=source,
                         cpu_step_times=True)
    warnings = "\n".join(plan.warnings)
    assert "boom: its trial crashed (exited with code 1" in warnings
    assert "hang: its trial reported no progress" in warnings
    assert "oom: its trial ran out of memory" in warnings
    assert plan.assumptions.measured_configs == ["baseline"]


@pytest.mark.parametrize("args, field", [
    (["--steps", "0"], "--steps"), (["--steps", "x"], "--steps"),
    (["--minutes", "0"], "--minutes"), (["--steps", "3", "--warmup", "-1"], "--warmup"),
    (["--steps", "3", "--timeout", "0"], "--timeout"),
    (["--steps", "3", "--minutes", "1"], "trial"), ([], "trial"),
    (["--steps", "3", "--cards", "0"], "--cards"), (["--steps", "3", "--cards", "1-0"], "--cards"),
    (["--steps", "3", "--warmup", "10" * 12], "--warmup"), (["--steps", "1e400"], "--steps"),
    (["--steps", "3", "--grace", "1e300"], "--grace"),
])
def test_bad_arguments_are_one_line_and_start_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        field: str) -> None:
    preset = _preset(tmp_path, {})
    out = tmp_path / "m.toml"
    assert _trial(tmp_path, preset, *args, "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and field in err and "Traceback" not in err
    assert not out.exists() and _scratch(tmp_path) == []
    assert list((tmp_path / "trace").iterdir()) == []


def test_an_existing_out_is_kept_without_force(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {})
    out = tmp_path / "m.toml"
    out.write_text("mine")
    assert _trial(tmp_path, preset, "--steps", "2", "--out", str(out)) == 2
    assert "already exists; pass --force" in capsys.readouterr().err
    assert out.read_text() == "mine" and _scratch(tmp_path) == []
    assert _trial(tmp_path, preset, "--steps", "2", "--out", str(out), "--force") == 0
    assert load_measurements(out).configs[0].outcome == "measured"


def test_cards_without_nvml_is_exit_3(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from planner.run import trial_device

    monkeypatch.setattr(trial_device, "open_nvml", lambda api=None: None)
    preset = _preset(tmp_path, {})
    out = tmp_path / "m.toml"
    work = tmp_path / "work"
    work.mkdir()
    rc = main(["trial", "--preset", str(preset), "--steps", "2", "--cards", "0",
               "--workdir", str(work), "--out", str(out)])
    assert rc == 3 and "NVML sees none" in capsys.readouterr().err
    assert not out.exists() and _scratch(tmp_path) == []


def test_an_embedding_preset_is_refused(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.toml"
    (tmp_path / "work").mkdir()
    rc = main(["trial", "--preset", "embedding-3d", "--steps", "2", "--device", "cpu",
               "--workdir", str(tmp_path / "work"), "--out", str(out)])
    err = capsys.readouterr().err
    assert rc == 2 and "campaign.kind" in err and not out.exists()


def test_a_budget_in_minutes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {})
    out = tmp_path / "m.toml"
    assert _trial(tmp_path, preset, "--minutes", "0.005", "--out", str(out)) == 0
    assert "0.005 min each after 2 warm-up" in capsys.readouterr().out
    m = load_measurements(out)
    assert m.workload.spec["minutes"] == 0.005 and "steps" not in m.workload.spec
    assert m.configs[0].step_time is not None
    env = json.loads((tmp_path / "trace" / "ok.json").read_text())
    assert "CAMPAIGN_TRIAL_STEPS" not in env


def test_an_impossible_peak_and_a_terminals_escapes_never_reach_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {"huge": "bytes-as-bits", "painted": "escape"})
    out = tmp_path / "m.toml"
    assert _trial(tmp_path, preset, "--steps", "3", "--out", str(out)) == 1
    printed = capsys.readouterr().out
    assert "\x1b" not in printed and "\x07" not in printed
    m = load_measurements(out)
    got = {c.config: c for c in m.configs}
    # A peak beyond any card's memory is no report: measured, without a memory figure.
    assert got["huge"].outcome == "measured" and got["huge"].memory is None
    assert got["painted"].reason == "exited with code 1: red failure"


def test_a_forged_reason_with_an_escape_is_one_line(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {"boom": "raise"})
    out = tmp_path / "m.toml"
    assert _trial(tmp_path, preset, "--steps", "3", "--out", str(out)) == 1
    text = out.read_text()
    assert 'outcome = "crashed"' in text
    out.write_text(re.sub(r'reason = "exited[^\n]*', r'reason = "\\u001b]0;owned\\u0007"', text))
    capsys.readouterr()
    assert main(["--preset", str(preset), "--measurements", str(out), "--out",
                 str(tmp_path / "plans")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "configs[1].reason" in err and "\x1b" not in err
    assert not (tmp_path / "plans").exists()


def test_a_claimed_start_up_without_a_step_time_is_not_charged(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {})
    out = tmp_path / "m.toml"
    assert _trial(tmp_path, preset, "--steps", "3", "--out", str(out)) == 0
    text = out.read_text()
    out.write_text(re.sub(r"\[configs.step_time\][^\[]*", "", text))
    loaded, source = load_preset(str(preset))
    plan = plan_campaign(loaded, load_catalog(None), measurements=load_measurements(out),
                         source=source, cpu_step_times=True)
    assert plan.assumptions.overheads.startup_minutes == 5.0
    assert not any(d.startswith("start-up ") for d in plan.decisions)


def test_an_out_that_cannot_be_written_is_refused_before_the_trial(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {})
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert _trial(tmp_path, preset, "--steps", "2", "--out", str(blocker / "m.toml")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--out" in err and "cannot be written" in err
    # A folder no file can be made in (procfs refuses even root).
    assert _trial(tmp_path, preset, "--steps", "2", "--out", "/proc/m.toml") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/proc/m.toml: --out: cannot be written" in err
    assert _trial(tmp_path, preset, "--steps", "2", "--out", str(tmp_path / "m.toml"),
                  "--scratch", "/proc") == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/proc: --scratch: cannot make" in err
    assert _scratch(tmp_path) == [] and list((tmp_path / "trace").iterdir()) == []
    assert list(tmp_path.glob(".trial-probe-*")) == []


def test_the_plan_line_is_one_to_paste(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    preset = _preset(tmp_path, {})
    out = tmp_path / "my measurements.toml"
    assert _trial(tmp_path, preset, "--steps", "2", "--out", str(out)) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "--measurements" in x)
    assert shlex.split(line)[-2:] == ["--measurements", str(out)]


def test_a_closed_terminal_stops_the_commands(tmp_path: Path) -> None:
    """SIGHUP (an SSH session gone) stops the trial as Ctrl-C does: nothing of the command
    outlives it, nothing is written."""
    preset = _preset(tmp_path, {})
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "m.toml"
    proc = subprocess.Popen([sys.executable, "-m", "planner", "trial", "--preset", str(preset),
                             "--device", "cpu", "--workdir", str(work), "--grace", "5",
                             "--minutes", "30", "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    while "starting on the CPU" not in proc.stdout.readline():
        pass
    trace = tmp_path / "trace" / "ok.json"
    deadline = time.monotonic() + 60
    pid = None
    while pid is None:  # until the command has started and said so
        assert time.monotonic() < deadline
        with contextlib.suppress(OSError, ValueError):
            pid = json.loads(trace.read_text())["pid"]
        time.sleep(0.01)
    proc.send_signal(signal.SIGHUP)
    assert proc.wait(timeout=300) == 130
    assert "stopped; nothing written" in proc.communicate()[1]
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped by the trial: gone
    assert not out.exists()

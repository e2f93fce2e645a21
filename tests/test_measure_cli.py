"""`campaign-planner measure` from the command line: errors are one line, exit 2 and
nothing written; a run writes measurements.toml that plans read."""

from __future__ import annotations

from pathlib import Path

import pytest
import tomli_w

from planner.cli.main import main
from planner.figures.measurements import load_measurements
from planner.planfile.export import read_plan
from tests.conftest import shipped

TINY = {"reference": "transformer", "d_model": 32, "layers": 1, "heads": 2, "seq_len": 16,
        "vocab": 64, "dtype": "fp32", "warmup_steps": 1, "steps": 2}


def tiny_file(tmp_path: Path) -> Path:
    data = shipped("ablation-3d")
    data["ablation"].update(micro_batch=4, accumulation=2, effective_batch=8, measure=TINY)
    path = tmp_path / "tiny.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def one_line_error(capsys: pytest.CaptureFixture[str], *parts: str) -> None:
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("campaign-planner: error: "), err
    for part in parts:
        assert part in err


@pytest.mark.parametrize(("args", "parts"), [
    (["--preset", "nope"], ["no shipped preset 'nope'"]),
    (["--preset", "embedding-7d"], ["embedding.measure: no measurement section"]),
    (["--preset", "ablation-3d", "--steps", "0"], ["must be at least 1"]),
    (["--preset", "ablation-3d", "--device", "tpu"], ["unknown device 'tpu'"]),
    (["--preset", "ablation-3d", "--catalog", "missing.toml"], ["missing.toml: file not found"]),
])
def test_measure_errors_exit_2_and_write_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str],
        parts: list[str]) -> None:
    out = tmp_path / "m.toml"
    assert main(["measure", *args, "--out", str(out)]) == 2
    one_line_error(capsys, *parts)
    assert not out.exists()


def test_measure_refuses_to_overwrite(tmp_path: Path,
                                      capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m.toml"
    out.write_text("keep me")
    assert main(["measure", "--preset", "ablation-3d", "--out", str(out)]) == 2
    one_line_error(capsys, "already exists; pass --force")
    assert out.read_text() == "keep me"


def test_measure_then_plan(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("torch")
    preset = tiny_file(tmp_path)
    out = tmp_path / "m.toml"
    assert main(["measure", "--preset", str(preset), "--out", str(out), "--steps", "2",
                 "--device", "cpu", "--threads", "1"]) == 0
    captured = capsys.readouterr()
    assert "measuring baseline" in captured.err          # progress goes to stderr
    assert "largest micro-batch on a6000" in captured.out
    assert f"--measurements {out}" in captured.out
    assert "Measured on CPU: a smoke test" in captured.out
    m = load_measurements(out)
    assert [c.config for c in m.configs] == ["baseline", "no-aux-loss"]
    assert m.command.startswith("campaign-planner measure --preset")
    plans = tmp_path / "plans"
    assert main(["--preset", str(preset), "--measurements", str(out), "--out", str(plans)]) == 0
    plan = read_plan(plans / "plan.toml")
    fig = plan.assumptions.figures[0]
    assert fig.peak_memory_gib.device.endswith("(fake-tensor estimate)")
    assert fig.step_time_s.source == "entered"
    assert "measured on CPU: memory used, step times kept" in plan.decisions
    assert plan.assumptions.measurements is not None
    assert plan.assumptions.measurements.file == str(out)
    # The same file against another preset is refused, naming the file and the field.
    assert main(["--preset", "ablation-3d", "--measurements", str(out)]) == 2
    one_line_error(capsys, f"{out}: workload.fingerprint")


def test_measure_without_torch_exits_3(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    import planner.measure as measure

    monkeypatch.setattr(measure, "torch_available", lambda: False)
    out = tmp_path / "m.toml"
    assert main(["measure", "--preset", "ablation-3d", "--out", str(out)]) == 3
    assert "torch is not installed" in capsys.readouterr().err
    assert not out.exists()


def test_ctrl_c_stops_cleanly_and_keeps_what_was_measured(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    import signal
    import subprocess
    import sys
    import time

    preset = tiny_file(tmp_path)
    out = tmp_path / "m.toml"
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner", "measure", "--preset", str(preset), "--out", str(out),
         "--steps", "100000", "--device", "cpu", "--threads", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    # Generous bounds, never reached unless it hangs: on a loaded 2-CPU machine the stop
    # alone has taken over a minute (about 10 s at load 6).
    deadline = time.monotonic() + 300
    # Wait until the baseline has a timed step, then interrupt.
    while "timing baseline: first step done" not in proc.stderr.readline():
        assert time.monotonic() < deadline and proc.poll() is None
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 130, stderr
    assert "keeping what was measured" in stderr
    m = load_measurements(out)
    assert m.partial and [c.config for c in m.configs] == ["baseline"]
    assert m.configs[0].step_time is not None and m.configs[0].step_time.steps >= 1
    assert "partial: stopped early" in stdout


def test_measure_on_cuda_without_a_gpu_exits_3(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    out = tmp_path / "m.toml"
    assert main(["measure", "--preset", str(tiny_file(tmp_path)), "--out", str(out),
                 "--device", "cuda"]) == 3
    assert "no CUDA device" in capsys.readouterr().err
    assert not out.exists()

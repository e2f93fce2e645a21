"""`planner.hooks`, the training script's side of the run contract, without a framework:
what it writes, when, and what it refuses."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from planner.hooks import Campaign, CampaignError, campaign_resume, env
from planner.run.progress import read_step


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _environ(tmp_path: Path, **more: str) -> dict[str, str]:
    ck = tmp_path / "ck"
    ck.mkdir(exist_ok=True)
    return {env.RUN_ID: "c-baseline-s0", env.CHECKPOINT_DIR: str(ck), env.RESUME: "",
            env.RESUME_PATH: str(ck / "latest"), env.PROGRESS: str(ck / "p.json"), **more}


def _read(path: Path) -> dict[str, object]:
    return json.loads(path.read_text())


def test_importing_the_hooks_loads_no_framework() -> None:
    code = ("import sys, planner.hooks; print(sorted(m for m in sys.modules if m.split('.')[0]"
            " in {'torch', 'transformers', 'lightning', 'pydantic', 'textual'}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_run_by_hand_it_keeps_nothing_and_never_stops(tmp_path: Path) -> None:
    c = Campaign(environ={})
    assert c.resume is None and c.save_path is None and campaign_resume({}) is None
    assert not any(c.step(n) for n in range(1, 50))
    with c.checkpoint(10) as path:
        Path(path).write_text("state")
    assert not Path(path).exists()
    c.saved_folder(str(tmp_path), 10)
    c.finish()
    assert list(tmp_path.iterdir()) == []


def test_progress_is_written_whole_at_most_every_few_seconds(tmp_path: Path) -> None:
    clock = Clock()
    e = _environ(tmp_path)
    c = Campaign(environ=e, every=5.0, clock=clock)
    progress = Path(e[env.PROGRESS])
    c.step(1)  # the first report is written at once: the timed part starts there
    assert _read(progress) == {"step": 1}
    clock.t = 1.0
    c.step(2)
    assert _read(progress) == {"step": 1}
    clock.t = 5.0
    c.step(3)
    assert _read(progress) == {"step": 3}
    assert read_step(progress) == 3  # as the executor reads it
    c.step(4)
    with c.checkpoint(4) as path:  # a checkpoint is said at once
        Path(path).write_text("state at 4")
    assert _read(progress) == {"step": 4, "checkpoint_step": 4}
    assert Path(e[env.RESUME_PATH]).read_text() == "state at 4"
    c.step(5)
    c.finish()
    assert _read(progress) == {"step": 5, "checkpoint_step": 4}
    assert [p.name for p in progress.parent.iterdir() if p.name.startswith(".")] == []


def test_a_trial_times_after_warm_up_stops_after_its_steps_and_saves_nothing(
        tmp_path: Path) -> None:
    e = _environ(tmp_path, **{env.TRIAL: "1", env.TRIAL_STEPS: "3"})
    clock = Clock()
    c = Campaign(environ=e, warmup_steps=2, every=1000.0, clock=clock)
    progress = Path(e[env.PROGRESS])
    assert c.step(1) is False
    assert _read(progress) == {"step": 1, "warmup": True}  # a trial hears of every step
    assert c.step(2) is False and c.timed_from == 2
    assert _read(progress) == {"step": 2}
    with c.checkpoint(2) as path:
        Path(path).write_text("x")
    assert not Path(e[env.RESUME_PATH]).exists() and not Path(path).exists()
    assert c.step(3) is False and _read(progress) == {"step": 3}
    assert c.step(4) is False
    clock.t = 0.5  # steps faster than the trial can read go on until it has read a few
    assert c.step(5) is False
    clock.t = 1.0
    assert c.step(6) is True
    assert _read(progress) == {"step": 6}
    assert list(c.steps(6, 100)) == []  # a loop ends once the budget is met


def test_a_checkpoint_ignored_is_an_error_never_a_restart(tmp_path: Path) -> None:
    e = _environ(tmp_path)
    Path(e[env.RESUME_PATH]).write_text("state at 20")
    e[env.RESUME] = e[env.RESUME_PATH]
    assert campaign_resume(e) == e[env.RESUME]
    with pytest.raises(CampaignError, match="training starts from step 0"):
        list(Campaign(environ=e).steps(0, 40))
    with pytest.raises(CampaignError, match="CAMPAIGN_RESUME="):
        Campaign(environ=e).step(1)  # a loop reporting from its first step
    assert list(Campaign(environ=e).steps(20, 23)) == [20, 21, 22]
    evaluation = {**e, env.RUN_KIND: "robustness"}  # handed the checkpoint it evaluates
    assert list(Campaign(environ=evaluation).steps(0, 2)) == [0, 1]
    assert not Path(e[env.PROGRESS]).exists()


def test_the_resume_path_is_replaced_whole_a_link_swapped_a_folder_refused(
        tmp_path: Path) -> None:
    e = _environ(tmp_path)
    ck, latest = Path(e[env.CHECKPOINT_DIR]), Path(e[env.RESUME_PATH])
    c = Campaign(environ=e)
    for step in (5, 10):
        (ck / f"checkpoint-{step}").mkdir()
        c.saved_folder(str(ck / f"checkpoint-{step}"), step)
        assert os.readlink(latest) == f"checkpoint-{step}"  # relative: the folder may move
    assert _read(Path(e[env.PROGRESS]))["checkpoint_step"] == 10
    with c.checkpoint(15) as path:  # a file replaces the link, not what it points to
        Path(path).write_text("15")
    assert not latest.is_symlink() and latest.read_text() == "15"
    assert list((ck / "checkpoint-10").iterdir()) == []
    latest.unlink()
    latest.mkdir()
    with pytest.raises(CampaignError, match="is a folder"), c.checkpoint(20) as path:
        Path(path).write_text("20")
    assert list(latest.iterdir()) == []
    with pytest.raises(CampaignError, match="is a folder"):
        c.saved_folder(str(ck / "checkpoint-10"), 10)


def test_a_failed_block_leaves_the_last_checkpoint(tmp_path: Path) -> None:
    e = _environ(tmp_path)
    Path(e[env.RESUME_PATH]).write_text("old")
    c = Campaign(environ=e)
    with pytest.raises(RuntimeError), c.checkpoint(3) as path:
        Path(path).write_text("half")
        raise RuntimeError("disk full")
    assert Path(e[env.RESUME_PATH]).read_text() == "old"
    assert sorted(p.name for p in Path(e[env.CHECKPOINT_DIR]).iterdir()) == ["latest"]


def test_on_cuda_the_peak_memory_is_reported(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = SimpleNamespace(is_available=lambda: True, is_initialized=lambda: True,
                           max_memory_allocated=lambda: 3 << 30)
    monkeypatch.setitem(sys.modules, "torch", SimpleNamespace(cuda=cuda))
    e = _environ(tmp_path)
    Campaign(environ=e).step(1)
    assert _read(Path(e[env.PROGRESS])) == {"step": 1, "peak_memory_bytes": 3 << 30}
    cuda.is_initialized = lambda: False  # CUDA the script never started is not started here
    Campaign(environ=e).step(2)
    assert _read(Path(e[env.PROGRESS])) == {"step": 2}


def test_a_progress_file_that_cannot_be_written_never_stops_training(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    e = _environ(tmp_path, **{env.PROGRESS: str(tmp_path / "missing" / "p.json")})
    c = Campaign(environ=e)
    assert not any(c.step(n) for n in range(1, 5))
    assert capsys.readouterr().err.count("cannot write the progress file") == 1


def test_the_executor_reads_the_contract_names_from_the_hooks() -> None:
    from planner.run import progress

    assert progress.ENV == env.PROGRESS == "CAMPAIGN_PROGRESS"

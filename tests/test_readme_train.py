"""The README's minimal train.py, taken from the README itself: planned, run with
`campaign-planner run`, resumed from its checkpoint by hand, and run with no campaign."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import torch

from planner.hooks import env
from tests.run_fixtures import harness as h

README = (Path(__file__).resolve().parent.parent / "README.md").read_text()


def _script() -> str:
    found = re.search(r"<!-- train\.py -->\n```python\n(.*?)```", README, re.DOTALL)
    assert found is not None, "the README has no minimal train.py"
    return found.group(1)


def _env(**more: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("CAMPAIGN_")}
    root = str(Path(__file__).resolve().parent.parent)  # this checkout's planner
    return {**base, "PYTHONPATH": root, **more}


def test_the_readme_train_py_is_short_and_runs_under_run(tmp_path: Path) -> None:
    script = _script()
    assert len(script.splitlines()) <= 20
    folder = tmp_path / "p"
    folder.mkdir()
    (folder / "train.py").write_text(script)
    data = h.preset(steps=120, seeds=(0,), cards=1, command=f"{h.PY} train.py {{steps}}",
                    variants={}, robustness=[])
    plan_path = h.make_plan(folder, data)
    run = h.load(plan_path).runs[0]
    proc = subprocess.run([sys.executable, "-m", "planner", "run", str(plan_path), "--poll",
                           "0.05"], env=_env(), capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    resume = folder / run.resume
    assert torch.load(resume)["step"] == 100
    progress = folder / run.checkpoint_dir / f"{run.id}.progress.json"
    assert json.loads(progress.read_text()) == {"step": 120, "checkpoint_step": 100}

    # Started again over its checkpoint for more steps, it goes on from step 100: no
    # checkpoint at 50 or 100 is written again.
    again = tmp_path / "again.progress.json"
    more = subprocess.run([sys.executable, "train.py", "130"], cwd=folder, env=_env(**{
        env.RESUME: str(resume), env.RESUME_PATH: str(resume), env.PROGRESS: str(again)}),
        capture_output=True, text=True, timeout=120)
    assert more.returncode == 0, more.stderr
    assert json.loads(again.read_text()) == {"step": 130}

    # Run by hand, it trains and leaves nothing behind.
    bare = tmp_path / "bare"
    bare.mkdir()
    (bare / "train.py").write_text(script)
    alone = subprocess.run([sys.executable, "train.py", "60"], cwd=bare, env=_env(),
                           capture_output=True, text=True, timeout=120)
    assert alone.returncode == 0, alone.stderr
    assert [p.name for p in bare.iterdir()] == ["train.py"]

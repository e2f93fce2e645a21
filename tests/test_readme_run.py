"""The documented example (docs/running.md) of a link refused where the executor writes,
run as written."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from tests.readme_examples import page_with
from tests.run_fixtures import harness as h


def _example() -> tuple[list[str], list[str]]:
    """The `$ ` command lines and the output lines of the example block."""
    lines = page_with("$ ln -s ~/.bashrc").splitlines()
    start = next(i for i, line in enumerate(lines)
                 if line.strip().startswith("$ ln -s ~/.bashrc"))
    block = []
    for line in lines[start:]:
        if not line.startswith("      "):
            break
        block.append(line.strip())
    return [x[2:] for x in block if x.startswith("$ ")], [x for x in block
                                                         if not x.startswith("$ ")]


def test_the_readme_link_example(tmp_path: Path) -> None:
    commands, expected = _example()
    assert len(commands) == 2 and len(expected) == 1
    h.make_plan(tmp_path / "plans" / "demo", h.preset(seeds=(0,), robustness=[]))
    (tmp_path / "plans" / "demo" / "campaign-run").mkdir()
    victim = tmp_path / "bashrc"
    victim.write_text("precious\n")
    link = shlex.split(commands[0].replace("~/.bashrc", str(victim)))
    assert subprocess.run(link, cwd=tmp_path).returncode == 0
    argv = shlex.split(commands[1])
    assert argv[0] == "campaign-planner"
    proc = subprocess.run([sys.executable, "-m", "planner", *argv[1:]], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 2
    assert proc.stderr.splitlines() == [e.replace("/…/", f"{tmp_path}/") for e in expected]
    assert victim.read_text() == "precious\n"

"""The documented worked example of what-if flags and factor sweeps (docs/what-if.md) is
the program's real output: each command in it is run, and its output must match the page
line for line."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from planner.cli.main import main
from tests.readme_examples import page_with


def _section() -> str:
    text = page_with("## Factor sweeps")
    start = text.index("## Factor sweeps")
    end = text.find("\n## ", start + 1)  # the page's last section runs to its end
    return text[start:end if end >= 0 else None]


def _block(section: str, opening: str) -> str:
    match = re.search(rf"^```{opening}\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
    assert match, opening
    return match.group(1)


def _examples(console: str) -> list[tuple[str, str]]:
    """(command, output) pairs of a console block."""
    out: list[tuple[str, str]] = []
    for line in console.splitlines():
        if line.startswith("$ "):
            out.append((line[2:], ""))
        else:
            cmd, text = out[-1]
            out[-1] = (cmd, text + line + "\n")
    return out


def test_the_sweep_example_is_the_real_output(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    section = _section()
    preset = _block(section, r"toml\n# sweep\.toml")
    (tmp_path / "sweep.toml").write_text(preset)
    monkeypatch.chdir(tmp_path)
    examples = _examples(_block(section, "console"))
    assert len(examples) == 2
    for command, expected in examples:
        argv = shlex.split(command)
        assert argv[0] == "campaign-planner"
        code = main(argv[1:])
        got = capsys.readouterr()
        assert code == (2 if "error" in expected else 0), command
        assert got.out + got.err == expected, command

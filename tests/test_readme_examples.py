"""Every command example of the README and of the docs pages that shows output is the
program's real output (see tests/readme_examples.py for how an example is written): each is
run in a folder holding the pages' `# NAME.toml` files, and must print what its page shows."""

from __future__ import annotations

import difflib
import shlex
from pathlib import Path

import pytest

from planner.cli.main import main
from tests.readme_examples import Example, examples, files

EXAMPLES = examples()


def test_the_readme_has_examples_and_files() -> None:
    commands = [e.command for e in EXAMPLES]
    assert any(c.startswith("campaign-planner advise") for c in commands)
    assert all(e.output for e in EXAMPLES), "an example without output shows nothing to check"
    assert {"prices.toml", "sweep.toml", "my-campaign.toml"} <= set(files())
    assert {e.page for e in EXAMPLES} >= {"README.md", "docs/advise.md", "docs/what-if.md"}


def test_the_reader_finds_examples_in_both_kinds_of_block() -> None:
    text = ("Text\n\n    $ campaign-planner presets\n    one\n\n    two\n\nMore\n\n"
            "```console\n$ campaign-planner cards\nthree\n...\n$ other\nnot mine\n```\n\n"
            "```toml\n# a.toml — a file\nx = 1\n```\n\n"
            "<!-- setup: campaign-planner --preset p --out d -->\n\n"
            "    $ campaign-planner report d/plan.toml\n    Wrote d/report.html\n")
    found = examples(text)
    assert [(e.line, e.command, e.output) for e in found] == [
        (3, "campaign-planner presets", ["one", "", "two"]),
        (11, "campaign-planner cards", ["three", "..."]),
        (25, "campaign-planner report d/plan.toml", ["Wrote d/report.html"])]
    assert [e.setup for e in found] == [(), (), ("campaign-planner --preset p --out d",)]
    assert found[1].matches("three\nfour\nfive\n") and not found[1].matches("four\n")
    assert files(text) == {"a.toml": "# a.toml — a file\nx = 1\n"}


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.page}:{e.line}" for e in EXAMPLES])
def test_the_example_is_the_real_output(example: Example, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    for name, text in files().items():
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    # The progress line of a long search depends on the machine's speed, not the program.
    monkeypatch.setattr("planner.cli.advise.PROGRESS_AFTER_S", float("inf"))
    for command in example.setup:
        assert main(shlex.split(command)[1:]) == 0, command
    capsys.readouterr()
    argv = shlex.split(example.command)
    code = main(argv[1:])
    got = capsys.readouterr()
    output = got.out + got.err
    shown = "\n".join(example.output) + "\n"
    assert example.matches(output), (
        f"{example.page} line {example.line}: `{example.command}` prints\n"
        + "".join(difflib.unified_diff(shown.splitlines(True), output.splitlines(True),
                                       example.page, "program")))
    assert code == (2 if "error:" in shown else 0), example.command

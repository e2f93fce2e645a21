"""The command examples of the README and of the docs pages, read as tests read them.

The convention, for any section of README.md or of a page of docs/:

- a command example is a line `$ campaign-planner ...` (in an indented block or a fenced
  ```console block); the lines after it, up to the next `$` line or the block's end, are
  its output, exactly as the program prints it (stdout, then stderr);
- a line that holds only `...` stands for any number of lines the example leaves out;
- a fenced ```toml block whose first line is `# NAME.toml` is a file the examples read: it
  is written as NAME.toml into the folder the examples run in;
- a line `<!-- setup: campaign-planner ... -->` (not shown by a Markdown viewer) is a
  command the next example needs run first, e.g. the export whose plan it reads; it must
  succeed, its output is not compared.

Setup lines and examples belong to their page; the `# NAME.toml` files of every page are
written for every example, so a file's name is shown with one text only.
`tests/test_readme_examples.py` runs every example so found; a new example is covered as
soon as it is written this way, on a new page too.
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"

PROMPT = "$ campaign-planner"
SETUP = re.compile(r"^<!-- setup: (campaign-planner .*) -->$")
ELLIPSIS = "..."


@dataclass(frozen=True)
class Example:
    """One command and the output the README shows for it."""

    line: int
    """Line of README.md the command is on (from 1)."""
    command: str
    """The command, without the `$ `."""
    output: list[str]
    """The lines shown under it (trailing blank lines dropped)."""
    setup: tuple[str, ...] = ()
    """Commands run before it (`<!-- setup: ... -->` lines above it)."""
    page: str = "README.md"
    """The page it is on, relative to the repository's root."""

    def matches(self, got: str) -> bool:
        """Whether the program's output is the one shown, `...` lines standing for any
        lines at all."""
        parts = [re.escape(line) + "\n" if line.strip() != ELLIPSIS else "(?:.*\n)*?"
                 for line in self.output]
        return re.fullmatch("".join(parts), got) is not None


def _blocks(lines: list[str]) -> list[tuple[int, list[str]]]:
    """(first line index, lines without their indentation) of each code block."""
    blocks: list[tuple[int, list[str]]] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            if line.strip() == "```console":
                blocks.append((i + 1, lines[i + 1:j]))
            i = j + 1
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            j = i
            while j < len(lines) and (lines[j].startswith("    ") or not lines[j].strip()):
                j += 1
            blocks.append((i, [text[4:] for text in lines[i:j]]))
            i = j
        else:
            i += 1
    return blocks


def pages() -> list[Path]:
    """README.md, then every page of docs/ in name order: the pages examples are read from."""
    return [README, *sorted(DOCS.glob("*.md"))]


def page_with(marker: str) -> str:
    """The text of the one page (README.md or a docs page) that holds `marker`: the tests of
    one section read it wherever it lives."""
    holding = [path for path in pages() if marker in path.read_text(encoding="utf-8")]
    assert len(holding) == 1, f"{marker!r} is on {len(holding)} pages: {holding}"
    return holding[0].read_text(encoding="utf-8")


def examples(text: str | None = None) -> list[Example]:
    """Every command example of the README and the docs pages (or of `text`), in order."""
    if text is None:
        return [dataclasses.replace(example, page=path.relative_to(ROOT).as_posix())
                for path in pages() for example in examples(path.read_text(encoding="utf-8"))]
    lines = text.splitlines()
    found: list[Example] = []
    setups = [(i, m.group(1).strip()) for i, line in enumerate(lines)
              if (m := SETUP.match(line))]
    for start, block in _blocks(lines):
        before = len(found)
        current: tuple[int, str, list[str]] | None = None
        for k, line in enumerate(block):
            if line.startswith("$ "):
                if current is not None:
                    found.append(_example(*current))
                current = (start + k + 1, line[2:], []) if line.startswith(PROMPT) else None
            elif current is not None:
                current[2].append(line)
        if current is not None:
            found.append(_example(*current))
        if len(found) > before:
            # Setup lines since the previous example's block belong to this block's first.
            after = found[before - 1].line - 1 if before else -1
            mine = tuple(cmd for i, cmd in setups if after < i < start)
            found[before] = dataclasses.replace(found[before], setup=mine)
    return found


def _example(line: int, command: str, output: list[str]) -> Example:
    while output and not output[-1].strip():
        output.pop()
    return Example(line, command, output)


def files(text: str | None = None) -> dict[str, str]:
    """Files the README and the docs pages (or `text`) show as `# NAME.toml` blocks:
    name → text. One name shown with two texts is an error."""
    if text is None:
        out: dict[str, str] = {}
        for path in pages():
            for name, body in files(path.read_text(encoding="utf-8")).items():
                assert out.get(name, body) == body, f"{name} is shown with two texts"
                out[name] = body
        return out
    readme = text
    out = {}
    for match in re.finditer(r"^```toml\n# ([\w.-]+\.toml)\b[^\n]*\n(.*?)^```$", readme,
                             re.MULTILINE | re.DOTALL):
        out[match.group(1)] = match.group(0).split("\n", 1)[1].rsplit("```", 1)[0]
    return out

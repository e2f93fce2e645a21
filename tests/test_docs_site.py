"""The README stays a newcomer's guide and the docs stay one site: the README is short, each
of its links into docs/ reaches a page and a heading there, and every page is in the site's
navigation. (`mkdocs build --strict`, in CI, checks the links between the pages themselves.)"""

from __future__ import annotations

import re
import unicodedata

from tests.readme_examples import DOCS, README, ROOT, pages

LINK = re.compile(r"\]\((docs/[^)#\s]*)(?:#([^)\s]+))?\)")
"""A Markdown link into docs/, with its anchor."""


def slug(heading: str) -> str:
    """The anchor Python-Markdown's `toc` (as MkDocs runs it) gives a heading; GitHub gives
    the same one to the headings these pages use."""
    text = re.sub(r"[`*]", "", heading)
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings (code blocks skipped)."""
    found, fenced = set(), False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and (m := re.match(r"^#{1,6} (.+)$", line)):
            found.add(slug(m.group(1)))
    return found


def test_the_slug_is_the_one_markdown_gives() -> None:
    assert slug("What fits: the packing objective") == "what-fits-the-packing-objective"
    assert slug("Which order to rent: `advise`") == "which-order-to-rent-advise"
    assert slug("A campaign over several machines (SLURM)") == (
        "a-campaign-over-several-machines-slurm")


def test_the_readme_is_a_newcomers_guide() -> None:
    text = README.read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    for part in ("## A first campaign in ten minutes", "## Commands", "## Documentation"):
        assert part in text, part


def test_every_link_of_the_readme_into_docs_reaches_its_page_and_heading() -> None:
    links = LINK.findall(README.read_text(encoding="utf-8"))
    assert len(links) >= 10
    for target, anchor in links:
        path = ROOT / target
        assert path.is_file(), target
        if anchor:
            assert anchor in anchors(path.read_text(encoding="utf-8")), f"{target}#{anchor}"


def test_every_page_is_in_the_navigation_and_every_entry_is_a_page() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = re.findall(r":\s*([\w./-]+\.md)\s*$", config, re.MULTILINE)
    on_disk = sorted(p.name for p in DOCS.glob("*.md"))
    assert sorted(listed) == on_disk
    assert len(listed) == len(set(listed))
    assert pages()[0].name == "README.md"

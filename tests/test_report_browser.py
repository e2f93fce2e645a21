"""The report opened in a real browser (headless Chromium): the schedule drawn with one bar
per scheduled run and its label, a screenshot that shows something, and not one request
out of the page."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import tomli_w

from planner.cli.main import main
from planner.planfile.export import read_plan
from planner.planfile.plan import Plan, Run
from tests.browser import chromium, open_page, png_size, screenshot
from tests.conftest import shipped

pytestmark = [
    pytest.mark.skipif(chromium() is None,
                       reason="chromium is not installed (apt-get install chromium; .ci/run "
                              "installs it)"),
    pytest.mark.filterwarnings("ignore::DeprecationWarning"),
]
pytest.importorskip("plotly", reason="the report needs the `report` extra (plotly)")


def expected_label(run: Run) -> str:
    """What the Gantt must write on a run's bar, from the run's own fields."""
    if run.kind == "embed":
        return f"v{run.version}·part{run.shard}"
    if run.kind == "robustness":
        suite = run.id.removeprefix(run.depends_on + "-").removesuffix("-eval")
        return f"{run.variant}·{run.seed} {suite}"
    return f"{run.variant}·{run.seed}"


def gantt_part(dom: str) -> str:
    """The schedule chart's part of the document (the first chart)."""
    start = dom.index('id="chart-0"')
    end = dom.find('id="chart-', start + 10)
    return dom[start:end if end > 0 else len(dom)]


def make_report(tmp_path: Path, preset: dict, name: str) -> tuple[Path, Plan]:
    """Export the preset, then report the exported plan (the path people take)."""
    src = tmp_path / f"{name}.toml"
    src.write_text(tomli_w.dumps(preset), encoding="utf-8")
    out = tmp_path / name
    assert main(["--preset", str(src), "--out", str(out), "--created",
                 "2026-01-01T00:00:00Z"]) == 0
    assert main(["report", str(out / "plan.toml")]) == 0
    return out / "report.html", read_plan(out / "plan.toml")


def check_in_browser(tmp_path: Path, page: Path, plan: Plan) -> None:
    text = page.read_text(encoding="utf-8")
    # The markup names no outside source (plotly.js holds URLs in its own strings, for map
    # tiles it never loads here: what it does load, the network log below shows).
    markup = re.sub(r"<script[^>]*>.*?</script>", "<script></script>", text, flags=re.S)
    assert markup.count("<script") == text.count("<script")
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", markup, re.I), \
        "the page names an outside source"
    assert not re.search(r"<script[^>]*\ssrc=", text, re.I), "every script is embedded"
    opened = open_page(page, tmp_path)
    assert opened.requests == [], f"the page asked the network for {opened.requests}"
    part = gantt_part(opened.dom)
    bars = re.findall(r'<g class="point">\s*<path', part)
    want = sorted(expected_label(r) for r in plan.runs for _ in r.card)
    assert len(bars) == len(want) == sum(len(r.card) for r in plan.runs)
    labels = sorted(re.findall(r'class="bartext[^"]*"[^>]*data-unformatted="([^"]*)"', part))
    assert labels == want
    for width, height in ((1280, 800), (1920, 1080)):
        png = tmp_path / f"{page.stem}-{width}.png"
        screenshot(page, png, width, height)
        assert png_size(png) == (width, height)
        from PIL import Image

        with Image.open(png) as im:
            small = im.convert("RGB").resize((160, 100))
            colours = small.getcolors(maxcolors=160 * 100) or []
            inked = sum(n for n, c in colours if sum(c) < 600)
        assert len(colours) > 20, "the screenshot is nearly one colour"
        assert inked > 0.03 * 160 * 100, "the screenshot is nearly blank"


def test_ablation_30d_on_8_cards_in_chromium(tmp_path: Path) -> None:
    preset = shipped("ablation-30d")
    preset["campaign"]["cards"] = 8
    page, plan = make_report(tmp_path, preset, "ablation-30d-8")
    assert plan.campaign.cards == 8 and len({c for r in plan.runs for c in r.card}) == 8
    check_in_browser(tmp_path, page, plan)


def test_embedding_preset_in_chromium(tmp_path: Path) -> None:
    page, plan = make_report(tmp_path, shipped("embedding-7d"), "embedding-7d")
    assert plan.embedding is not None
    check_in_browser(tmp_path, page, plan)


def test_the_network_check_sees_a_page_that_fetches(tmp_path: Path) -> None:
    # The check above is only worth something if it catches a page that does fetch.
    page = tmp_path / "fetches.html"
    page.write_text('<html><body><img src="http://example.invalid/x.png"></body></html>',
                    encoding="utf-8")
    assert open_page(page, tmp_path, budget_ms=2000).requests == ["http://example.invalid/x.png"]

"""Regenerate the report's picture on docs/report.md: `ablation-30d` on 8 cards, opened in
headless Chromium at 1280 × 800.

    python benchmarks/report_screenshot.py [OUT.png]   # default: docs/report.png
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from planner.report.page import report_html
from tests.browser import chromium, screenshot
from tests.conftest import plan_dict, shipped

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    if chromium() is None:
        sys.exit("chromium is not installed: apt-get install chromium")
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "docs" / "report.png"
    preset = shipped("ablation-30d")
    preset["campaign"]["cards"] = 8
    with tempfile.TemporaryDirectory() as tmp:
        page = Path(tmp) / "report.html"
        page.write_text(report_html(plan_dict(preset)), encoding="utf-8")
        out.parent.mkdir(parents=True, exist_ok=True)
        screenshot(page, out, 1280, 800)
    print(f"Wrote {out}")


if __name__ == "__main__":
    main()

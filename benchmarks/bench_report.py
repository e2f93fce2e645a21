"""Size and opening time of the HTML report of a 1,000-run plan: prints them, asserts
nothing.

    python benchmarks/bench_report.py [--runs-per-seed 100] [--seeds 10]

1. Writing it: `report_html` for a plan of 100 configurations × 10 seeds (1,000 runs) on 8
   cards, and the file's size. Target: at most 6 MB.
2. Opening it in headless Chromium (the page as written, plus one script at its end that
   notes `performance.now()` once every chart's script has run): the time from the start of
   navigation to the charts drawn, read from the page itself, and the DOM checked for one
   bar per run. Wall time of the whole browser process is printed beside, against the
   same browser opening an empty page. Target: at most 2 s.

Figures are printed beside the load average: on a shared machine wall time also counts the
waits for a core.
"""

from __future__ import annotations

import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

# The browser helpers live with the tests, at the repository's root.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from planner.campaign import plan_campaign
from planner.planfile.plan import Plan
from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset

MARK = ("<script>document.body.setAttribute('data-drawn-ms', performance.now().toFixed(1));"
        "</script></body>")


def big_plan(configs: int = 100, seeds: int = 10, cards: int = 8) -> Plan:
    """A 30-day ablation whose matrix of configs × seeds training runs all fit."""
    data: dict[str, Any] = {
        "campaign": {"name": "bench-report", "kind": "ablation", "window_days": 30,
                     "card": "a6000", "cards": cards},
        "overheads": {"stack_check_hours": 1.0, "eval_every_steps": 1000, "eval_minutes": 5.0},
        "ablation": {
            "steps": 8000, "seeds": list(range(seeds)), "micro_batch": 8, "accumulation": 4,
            "command": "python train.py --run-id {run_id} {overrides}",
            "baseline": {"factors": {"lr": 1.0}, "step_time_s": {"value": 1.1,
                                                                 "source": "entered"},
                         "peak_memory_gib": {"value": 30.0, "source": "entered"}},
            "variants": [
                {"name": f"v{i}", "changes": {"lr": float(i + 2)},
                 "step_time_s": {"value": 0.8 + (i % 7) * 0.1, "source": "entered"},
                 "peak_memory_gib": {"value": 28.0 + (i % 15), "source": "entered"}}
                for i in range(configs - 1)
            ],
        },
    }
    from datetime import UTC, datetime

    return plan_campaign(parse_preset(data, "bench"), load_catalog(),
                         created=datetime(2026, 1, 1, tzinfo=UTC), source="bench")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def chromium_dom(page: Path, profile: Path) -> tuple[str, float, float]:
    """The DOM once the page loaded, the browser's wall time, and the CPU time of the
    browser's processes (those it waited for)."""
    from tests.browser import _flags, chromium

    binary = chromium()
    if binary is None:
        sys.exit("chromium is not installed: apt-get install chromium")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    proc = subprocess.run([binary, *_flags(profile), "--dump-dom", page.as_uri()],
                          capture_output=True, text=True, timeout=120, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime
    return proc.stdout, wall, cpu


def main() -> None:
    from planner.report.page import report_html

    configs = int(sys.argv[sys.argv.index("--runs-per-seed") + 1]) \
        if "--runs-per-seed" in sys.argv else 100
    seeds = int(sys.argv[sys.argv.index("--seeds") + 1]) if "--seeds" in sys.argv else 10
    plan = big_plan(configs, seeds)
    print(f"plan: {len(plan.runs)} runs scheduled of {plan.summary.runs_total}, "
          f"{plan.campaign.cards} cards; {load()}")
    times = []
    for _ in range(3):
        t = time.perf_counter()
        html = report_html(plan)
        times.append(time.perf_counter() - t)
    size = len(html.encode())
    print(f"1. report_html: median {statistics.median(times) * 1000:.0f} ms of 3; "
          f"{size / 1e6:.2f} MB ({size:,} bytes; target ≤ 6 MB); {load()}")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        page = work / "report.html"
        page.write_text(html.replace("</body>", MARK, 1), encoding="utf-8")
        empty = work / "empty.html"
        empty.write_text("<html><body>empty</body></html>", encoding="utf-8")
        drawn, walls, bare, cpus, bare_cpus = [], [], [], [], []
        for n in range(3):
            dom, wall, cpu = chromium_dom(page, work / f"p{n}")
            mark = re.search(r'data-drawn-ms="([0-9.]+)"', dom)
            start = dom.index('id="chart-0"')
            gantt = dom[start:dom.find('id="chart-1"', start)]
            bars = len(re.findall(r'<g class="point">\s*<path', gantt))
            if mark is None or bars != sum(len(r.card) for r in plan.runs):
                sys.exit(f"the page did not draw every bar ({bars} drawn)")
            drawn.append(float(mark.group(1)) / 1000)
            walls.append(wall)
            cpus.append(cpu)
            _, wall, cpu = chromium_dom(empty, work / f"e{n}")
            bare.append(wall)
            bare_cpus.append(cpu)
        print(f"2. opened in headless chromium: charts drawn {statistics.median(drawn):.2f} s "
              f"after navigation started (median of 3, max {max(drawn):.2f} s; target ≤ 2 s), "
              f"{bars} bars in the DOM; browser process {statistics.median(walls):.2f} s wall, "
              f"{statistics.median(cpus):.2f} s CPU, against {statistics.median(bare):.2f} s "
              f"wall, {statistics.median(bare_cpus):.2f} s CPU for an empty page; {load()}")


if __name__ == "__main__":
    main()

"""Speed figures for the terminal UI: prints them, asserts nothing.

    python benchmarks/bench_tui.py

1. Recomputing the fit of a 1,000-run matrix (100 configurations × 10 seeds on 8 cards):
   `plan_campaign` alone; an edit as the app makes it (validate the new preset, plan it);
   the Fit screen bringing its widgets in line and drawing the visible lines of the table,
   timeline and memory bars; and an edit end to end in the running app (Fit screen shown,
   headless driver, 120×40), from the edit to the end of the frame that shows it, and to
   the end of the last compositor pass it causes (an edit that changes the card count
   makes the timeline a line taller: the screen is laid out once, and the scrollbar's
   moved thumb is drawn in that same frame, not again a frame later).
   Target: at most 50 ms.
2. Startup to the first screen: a fresh `campaign-planner --tui` process (headless driver),
   from spawning it to Textual's Ready event (the first frame drawn), and whether torch
   was imported, at 80×24 and at 120×36, the two sizes taken in turn so that both see the
   same load. Target: at most 0.8 s, without torch; 120×36 within 20% of 80×24.
3. A screen switch on the 1,000-run matrix, in the running app at 120×36: from the key to
   the end of the frame that shows the screen, each screen's first visit (its module
   imported, composed and filled) and a later one. CPU time is the UI thread's (Advise
   starts its search in a worker thread, which is not the switch). Target: at most 100 ms.
4. Quit on the 1,000-run matrix: a fresh process that has shown every screen is asked to
   quit (ctrl+q, nothing unsaved); from the key to the process's end, wall and CPU.
   Target: at most 300 ms CPU.

Every figure is printed beside the load average, with CPU time beside wall time: on a
shared machine wall time also counts the waits for a core.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import sys
import time
from typing import Any

from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from planner.spec.preset import Preset


def big_preset(variants: int = 99, seeds: int = 10) -> Preset:
    """An ablation whose matrix holds (variants + 1) × seeds training runs."""
    return parse_preset(big_data(variants, seeds), "bench")


def big_data(variants: int = 99, seeds: int = 10) -> dict[str, Any]:
    """That preset as the data of a preset file."""
    fig = {"value": 1.1, "source": "entered"}
    data: dict[str, Any] = {
        "campaign": {"name": "bench", "kind": "ablation", "window_days": 30, "card": "a6000",
                     "cards": 8},
        "overheads": {"stack_check_hours": 1.0, "eval_every_steps": 1000, "eval_minutes": 5.0},
        "ablation": {
            "steps": 20000, "seeds": list(range(seeds)), "micro_batch": 8, "accumulation": 4,
            "command": "python train.py --run-id {run_id} {overrides}",
            "baseline": {"factors": {"lr": 1.0, "depth": 12}, "step_time_s": fig,
                         "peak_memory_gib": {"value": 30.0, "source": "entered"}},
            "variants": [
                {"name": f"v{i}", "changes": {"lr": float(i + 2)},
                 "step_time_s": {"value": 0.8 + (i % 7) * 0.1, "source": "entered"},
                 "peak_memory_gib": {"value": 28.0 + (i % 30), "source": "entered"},
                 "memory_per_sample_gib": 1.5}
                for i in range(variants)
            ],
        },
    }
    return data


def load() -> str:
    """The load average, for reading the figures beside."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def ms(times: list[tuple[float, float]]) -> str:
    """Median and worst wall time, and median CPU time, of (wall, cpu) seconds, in ms.

    CPU time is this process's own: on a machine shared with other work it shows the cost
    of the work itself, where wall time also counts the waits for a core.
    """
    wall = [w for w, _ in times]
    cpu = [c for _, c in times]
    return (f"wall median {statistics.median(wall) * 1000:6.1f} ms, max "
            f"{max(wall) * 1000:6.1f} ms; CPU median {statistics.median(cpu) * 1000:6.1f} ms")


def timed(fn: Any, repeat: int) -> list[tuple[float, float]]:
    out = []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        fn()
        out.append((time.perf_counter() - t, time.process_time() - c))
    return out


Times = list[tuple[float, float]]


async def in_app(preset: Preset, repeat: int) -> tuple[Times, Times, Times]:
    """(Fit screen redraw, edit to first frame, edit to last frame) in seconds, with the
    Fit screen shown.

    Edit to frame: from the edit to the end of the first compositor pass that follows it
    (the frame that shows the new plan), and to the end of the last one (a repaint after
    it, such as the scrollbar's); waiting for idle itself is not counted.
    """
    from textual.screen import Screen

    from screens.app import PlannerApp
    from screens.fit import FitScreen
    from screens.widgets.gantt import Timeline
    from screens.widgets.matrix import MatrixTable
    from screens.widgets.membar import MemoryBars

    frames: list[tuple[float, float]] = []
    compose = Screen._compositor_refresh

    def timed_compose(self: Screen) -> None:
        compose(self)
        frames.append((time.perf_counter(), time.process_time()))

    Screen._compositor_refresh = timed_compose  # type: ignore[method-assign]
    app = PlannerApp(preset, source="bench")
    redraw: Times = []
    first: Times = []
    end_to_end: Times = []
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, FitScreen)
        widgets = [screen.query_one(MatrixTable), screen.query_one(Timeline),
                   screen.query_one(MemoryBars)]

        def draw() -> None:
            screen.show(app.workspace)
            for w in widgets:  # the visible lines, as the compositor asks for them
                for y in range(min(40, len(w.lines()))):
                    w.render_line(y)

        redraw = timed(draw, repeat)
        for i in range(repeat):
            frames.clear()
            t, c = time.perf_counter(), time.process_time()
            app.edit("campaign", cards=7 + i % 2)
            await pilot.pause()
            first.append((frames[0][0] - t, frames[0][1] - c))
            end_to_end.append((frames[-1][0] - t, frames[-1][1] - c))
    Screen._compositor_refresh = compose  # type: ignore[method-assign]
    return redraw, first, end_to_end


async def switches(preset: Preset, rounds: int = 3) -> dict[str, list[Times]]:
    """Per screen: (wall, UI-thread CPU) seconds from its key to the end of the last frame
    it causes, for the first visit and for the later ones."""
    from textual.screen import Screen

    from screens.app import PlannerApp
    from screens.widgets.nav import SCREENS

    frames: list[tuple[float, float]] = []
    compose = Screen._compositor_refresh

    def timed_compose(self: Screen) -> None:
        compose(self)
        frames.append((time.perf_counter(), time.thread_time()))

    Screen._compositor_refresh = timed_compose  # type: ignore[method-assign]
    app = PlannerApp(preset, source="bench")
    out: dict[str, list[Times]] = {title: [[], []] for _, _, title in SCREENS}
    async with app.run_test(size=(120, 36)) as pilot:
        await pilot.pause()
        for round_ in range(rounds):
            for key, _, title in [*SCREENS[1:], SCREENS[0]]:
                frames.clear()
                t, c = time.perf_counter(), time.thread_time()
                await pilot.press(key)
                await pilot.pause()
                end = frames[-1] if frames else (time.perf_counter(), time.thread_time())
                out[title][min(round_, 1)].append((end[0] - t, end[1] - c))
        app.workers.cancel_all()
    Screen._compositor_refresh = compose  # type: ignore[method-assign]
    return out


QUIT_CHILD = """
import sys, time
from pathlib import Path
import screens.app as ui
from screens.widgets.nav import SCREENS

class Timed(ui.PlannerApp):
    CSS_PATH = [str(Path(ui.__file__).parent / p) for p in ui.PlannerApp.CSS_PATH]

    async def on_ready(self) -> None:
        for _, mode, _ in SCREENS:
            self.switch_mode(mode)
        self.workers.cancel_all()
        self.call_after_refresh(self.quit_now)

    async def quit_now(self) -> None:
        print(f"{time.time():.6f} {time.process_time():.6f}", flush=True)
        await self.run_action("quit")

    def run(self, **kwargs):
        return super().run(headless=True, size=(120, 36))

ui.PlannerApp = Timed
from planner.cli.main import console
sys.argv = ["campaign-planner", "--preset", sys.argv[1], "--tui"]
sys.exit(console())
"""


def quitting(repeat: int = 5) -> Times:
    """(Wall, CPU) seconds from the quit key to the end of the process (the console
    script's path: `campaign-planner --preset BIG --tui`)."""
    import resource
    import tempfile

    import tomli_w

    out: Times = []
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench.toml")
        with open(path, "wb") as f:
            tomli_w.dump(big_data(), f)
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            proc = subprocess.run([sys.executable, "-c", QUIT_CHILD, path],
                                  capture_output=True, text=True, check=True, timeout=120)
            ended = time.time()
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            at, cpu_at = map(float, proc.stdout.split()[-2:])
            cpu = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
            out.append((ended - at, cpu - cpu_at))
    return out


CHILD = """
import sys, time
t0 = float(sys.argv[1])
width, height = int(sys.argv[2]), int(sys.argv[3])
from pathlib import Path
import screens.app as ui

class Timed(ui.PlannerApp):
    # Stylesheets resolve against the class's file, which this script has not.
    CSS_PATH = [str(Path(ui.__file__).parent / p) for p in ui.PlannerApp.CSS_PATH]

    def on_ready(self) -> None:
        torch = any(m.split(".")[0] == "torch" for m in sys.modules)
        print(f"{time.time() - t0:.4f} {time.process_time():.4f} {torch}")
        self.exit()

    def run(self, **kwargs):
        return super().run(headless=True, size=(width, height))

ui.PlannerApp = Timed
from planner.cli.main import main
sys.exit(main(["--tui"]))
"""


SIZES = ((80, 24), (120, 36))


def startup(repeat: int = 7) -> tuple[dict[tuple[int, int], Times], set[str]]:
    """(Wall, CPU) seconds from spawning `campaign-planner --tui` to the first frame, per
    terminal size; the sizes taken in turn, so that both see the same load."""
    times: dict[tuple[int, int], Times] = {size: [] for size in SIZES}
    torch = set()
    for _ in range(repeat):
        for size in SIZES:
            proc = subprocess.run([sys.executable, "-c", CHILD, repr(time.time()),
                                   *map(str, size)], capture_output=True, text=True,
                                  check=True)
            seconds, cpu, loaded = proc.stdout.split()[-3:]
            times[size].append((float(seconds), float(cpu)))
            torch.add(loaded)
    return times, torch


def main() -> None:
    from screens import state

    preset = big_preset()
    catalog = load_catalog()
    ws = state.start(preset, catalog)
    s = ws.plan.summary
    print(f"matrix: {s.matrix_runs} training runs, {s.matrix_runs_fit} fit on 8 × a6000 in "
          f"30 days ({len(ws.plan.runs)} scheduled)")
    from planner.campaign import plan_campaign

    print(f"plan_campaign alone        {ms(timed(lambda: plan_campaign(preset, catalog), 30))}")

    def edit() -> None:
        state.apply(ws, state.edit(ws.preset, "campaign", cards=7), catalog)

    print(f"edit as the app makes it   {ms(timed(edit, 30))}")
    redraw, first, end_to_end = asyncio.run(in_app(preset, 20))
    print(f"Fit screen redraw          {ms(redraw)}")
    print(f"edit to the frame showing it   {ms(first)}   (target <= 50 ms); {load()}")
    print(f"edit to its last frame     {ms(end_to_end)}   (target <= 50 ms); {load()}")
    per_screen = asyncio.run(switches(preset))
    for title, (first_visit, later) in per_screen.items():
        print(f"switch to {title:<9} first {ms(first_visit)}", flush=True)
        print(f"{'':19} later {ms(later)}   (target <= 100 ms); {load()}", flush=True)
    print(f"quit after every screen    {ms(quitting())}   (target <= 300 ms CPU); {load()}")
    sizes, torch = startup()
    for (w, h), times in sizes.items():
        wall, cpu = [x for x, _ in times], [c for _, c in times]
        print(f"startup to first frame {w}×{h}  wall median {statistics.median(wall):.3f} s, "
              f"max {max(wall):.3f} s; CPU median {statistics.median(cpu):.3f} s   (target <= "
              f"0.8 s); torch imported: {', '.join(sorted(torch))}; {load()}")
    small, big = (statistics.median(c for _, c in sizes[size]) for size in SIZES)
    print(f"first frame 120×36 / 80×24: CPU {big / small:.2f}×   (target <= 1.20×)")


if __name__ == "__main__":
    main()

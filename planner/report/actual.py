"""What actually ran, from a working directory's journal: each run's actual span on the
card it ran on, against the plan, and the hour it is now. Reads only."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner.planfile.plan import Plan
from planner.report.bars import hours
from planner.run.journal import Workspace, fold, read_events
from planner.run.status import summarize

STATE_COLOURS = {"done": "#1b5e20", "running": "#f9a825", "failed": "#b71c1c",
                 "pending": "#9e9e9e", "blocked": "#6d4c41"}


@dataclass
class Actual:
    """The status of a running (or finished) plan, as the report draws it."""

    status: dict[str, Any]
    """What `status --json` prints."""
    cards: dict[str, list[int]]
    """Plan card slots each run that started actually held."""

    @property
    def started(self) -> bool:
        return bool(self.status["started"])

    @property
    def now_h(self) -> float:
        return float(self.status["now_h"])

    def spans(self) -> list[tuple[dict[str, Any], int, float, float]]:
        """(run's status, card slot, start h, end h) of every run that has started: done
        runs to their end, the others to now (or their last exit)."""
        out = []
        for r in self.status["runs"]:
            start = r["actual_start_h"]
            if start is None or not self.started:
                continue
            end = r["actual_end_h"]
            if end is None:
                end = start + r["actual_s"] / 3600 if r["state"] != "running" else self.now_h
            for card in self.cards.get(r["id"], []):
                out.append((r, card, start, max(end, start)))
        return out

    def draw(self, fig: Any, names: list[str]) -> None:
        """Actual spans as a strip under each planned bar, and a line at now."""
        import plotly.graph_objects as go

        spans = [s for s in self.spans() if s[1] < len(names)]
        if spans:
            fig.add_trace(go.Bar(
                orientation="h", name="actual", base=[s[2] for s in spans],
                x=[s[3] - s[2] for s in spans], y=[names[s[1]] for s in spans],
                width=0.2, offset=0.16,
                marker={"color": [STATE_COLOURS.get(s[0]["state"], "#333") for s in spans]},
                customdata=[[s[0]["id"], s[0]["state"], hours(s[2]), hours(s[3]),
                             hours(s[0]["planned_start_h"]), hours(s[0]["planned_end_h"])]
                            for s in spans],
                hovertemplate=("<b>%{customdata[0]}</b> (%{customdata[1]})<br>actual "
                               "%{customdata[2]} – %{customdata[3]}<br>planned "
                               "%{customdata[4]} – %{customdata[5]}<extra>actual</extra>")))
        if self.started:
            fig.add_vline(x=self.now_h, line={"color": "#000", "width": 2},
                          annotation_text=f"now, h {self.now_h:.1f}",
                          annotation_position="top right")


def load_actual(plan: Plan, workdir: str | Path, now: float | None = None) -> Actual:
    """The journal in `workdir` read against `plan`; an absent journal is a plan not
    started yet."""
    ws = Workspace(Path(workdir).expanduser().absolute())
    hist = fold(read_events(ws.journal))
    status = summarize(plan, hist, ws, time.time() if now is None else now)
    slots = {card: i for i, card in enumerate(hist.cards)}
    cards = {rid: [slots.get(c, c) for c in rec.cards] for rid, rec in hist.runs.items()}
    return Actual(status, cards)

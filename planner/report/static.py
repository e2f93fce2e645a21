"""The Gantt alone as an SVG or PNG, drawn with matplotlib.

plotly writes static images only through kaleido, which drives a Chrome it downloads
(or finds installed); matplotlib draws the same bars with no browser at all.
"""

from __future__ import annotations

import io
from typing import Literal

from planner.planfile.plan import Plan
from planner.report.bars import bars, groups, plain_text
from planner.report.palette import colour_of

Static = Literal["svg", "png"]


def gantt_image(plan: Plan, fmt: Static) -> bytes:
    """The schedule as image bytes: runs on the cards coloured by variant and labelled
    where they are wide enough, reserved hours shaded, the usable window's end marked."""
    import matplotlib

    matplotlib.use("Agg")  # no display: the image is written, never shown
    matplotlib.rcParams["svg.hashsalt"] = "campaign-planner"  # the same ids every time
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    c = plan.campaign
    every = bars(plan)
    colours = colour_of(groups(plan))
    width_in = 14.0
    fig, ax = plt.subplots(figsize=(width_in, 1.2 + 0.42 * c.cards), dpi=110)
    try:
        for g in groups(plan):
            mine = [b for b in every if b.group == g]
            for evaluation in (False, True):
                part = [b for b in mine if (b.kind == "robustness") == evaluation]
                for b in part:
                    ax.barh(b.card, b.end_h - b.start_h, left=b.start_h, height=0.7,
                            color=colours[g], edgecolor="white", linewidth=0.4,
                            hatch="///" if evaluation else None)
        # A label is drawn where it fits: 7-point text is about 4.3 points a character.
        points_per_hour = width_in * 72 * 0.8 / c.window_hours
        for b in every:
            if (b.end_h - b.start_h) * points_per_hour > 4.3 * len(b.label) + 4:
                ax.text((b.start_h + b.end_h) / 2, b.card, plain_text(b.label), ha="center",
                        va="center", fontsize=7, color="white", clip_on=True)
        ax.axvspan(0, c.usable_from_h, color="#999", alpha=0.2, lw=0)
        ax.axvspan(c.usable_until_h, c.window_hours, color="#999", alpha=0.2, lw=0)
        ax.axvline(c.usable_until_h, color="#c0392b", ls="--", lw=1.5)
        ax.set_xlim(0, c.window_hours)
        ax.set_ylim(c.cards - 0.5, -0.5)
        ax.set_yticks(range(c.cards), [f"card {i}" for i in range(c.cards)])
        ax.set_xlabel("hours from the window's start")
        title = (f"{c.name}: {plan.summary.runs_scheduled} runs on {c.cards} × {c.card_name}; "
                 f"runs end by hour {c.usable_until_h:g}")
        ax.set_title(plain_text(title), fontsize=10)
        ax.legend(handles=[Patch(color=colours[g], label=plain_text(g)) for g in groups(plan)],
                  loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8, frameon=False)
        fig.tight_layout()
        out = io.BytesIO()
        # Fixed metadata: the same plan gives the same bytes.
        meta = {"Date": None} if fmt == "svg" else {"Software": "campaign-planner"}
        fig.savefig(out, format=fmt, metadata=meta)
        return out.getvalue()
    finally:
        plt.close(fig)

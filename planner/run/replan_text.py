"""A replan's difference, for a person."""

from __future__ import annotations

from pathlib import Path

from planner.run.replan import Replan


def _ids(ids: list[str], most: int = 6) -> str:
    more = f" and {len(ids) - most} more" if len(ids) > most else ""
    return ", ".join(ids[:most]) + more if ids else "none"


def render(r: Replan, written: Path, workdir: Path) -> str:
    """What the revision changed and how to run it."""
    c = r.plan.campaign
    lines = [f"Revision  {r.plan.revision} of {c.id} (replaces {r.plan.parent}) at hour "
             f"{r.now_h:.3f} of {c.window_hours:g}",
             f"Runs      {len(r.finished)} finished · {len(r.running)} running · "
             f"{len(r.remaining)} re-timed · {len(r.dropped)} dropped · {len(r.added)} added"]
    for name, rate in r.observed.items():
        lines.append(f"Step time {name}: {rate.words()}")
    lines.append(f"Projected last run ends at hour {r.projected_end_h:.3f}; runs must end by "
                 f"hour {c.usable_until_h:g}")
    for rid, resume in r.resuming.items():
        lines.append(f"Resumes   {rid} from step {resume.step}"
                     f"{'' if resume.recorded else ' at least'} ({resume.how})")
    for d in r.dropped:
        lines.append(f"No longer fits  {d.id}: {d.reason}")
    if r.added:
        lines.append(f"Now fits too    {_ids(r.added)}")
    room = r.room_left
    if room:
        more = room.get("seed_sets_more_at_most")
        lines.append(f"Room left {room['card_hours']:.4g} card-hours after this revision"
                     + (f" (at most {more} more seed set{'s' if more != 1 else ''} by "
                        "card-hours)" if more is not None else ""))
    lines += [f"Wrote {written} (order.toml unchanged)",
              f"Run it with: campaign-planner run {written} --workdir {workdir}"]
    return "\n".join(lines)

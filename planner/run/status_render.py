"""The status for a person: the text `campaign-planner status` prints from a summary."""

from __future__ import annotations

import functools
from datetime import timedelta
from typing import Any

import humanize


@functools.lru_cache(maxsize=4096)
def span(seconds: float) -> str:
    """A duration in words, through humanize (the runs of a matrix share a few durations:
    each is worded once)."""
    s = abs(seconds)
    unit = "seconds" if s < 600 else "minutes" if s < 86400 else "hours"
    return humanize.precisedelta(timedelta(seconds=s), minimum_unit=unit,
                                 format="%0.1f" if s < 10 else "%0.0f")


def observed_lines(s: dict[str, Any]) -> list[str]:
    """Observed step times per variant and the room left, once anything was observed;
    `not yet` once the window started but no run has two progress samples yet."""
    every = s.get("observed", {})
    seen = {k: v for k, v in every.items() if v["seconds_per_step"] is not None}
    if not s["started"] or not every:
        return []
    if not seen:
        return ["Observed  not yet: a step time needs two progress samples of one run "
                "(planned step times assumed)"]
    rates = " · ".join(f"{k} {v['seconds_per_step']:.3g} s/step ({v['ratio']:.2f}×"
                       f"{'' if v['source'] == 'observed' else ', campaign ratio'})"
                       for k, v in seen.items())
    room = s["capacity_left"]
    more = room["seed_sets_more_at_most"]
    return [f"Observed  {rates}",
            f"Room left {room['card_hours']:.4g} card-hours after the work left"
            + (f" (at most {more} more seed set{'s' if more != 1 else ''})"
               if more is not None else "")]


def pace_cell(r: dict[str, Any]) -> str:
    """`  step 40/100 (reported) · 0.62 s/step, planned 0.30` for a run with figures."""
    parts = []
    if r.get("state") == "running" and r.get("progress"):
        parts.append(f"step {r['step']}/{r['steps']} ({r['progress']})")
    if r.get("resumes_from_step"):
        parts.append(f"resumes from step {r['resumes_from_step']}/{r['steps']}"
                     + ("" if r.get("resumes_recorded") else " at least"))
    if r.get("observed_s_per_step") is not None and r.get("planned_s_per_step"):
        parts.append(f"{r['observed_s_per_step']:.3g} s/step, planned "
                     f"{r['planned_s_per_step']:.3g}")
    return ("  " + " · ".join(parts)) if parts else ""


@functools.lru_cache(maxsize=4096)
def took(seconds: float) -> str:
    """A duration in words short enough for a status row (at most 11 characters up to
    999 hours): in seconds, minutes or hours alone, through humanize."""
    s = abs(seconds)
    if s < 60:
        return humanize.precisedelta(timedelta(seconds=s), format="%0.1f" if s < 10 else
                                     "%0.0f")
    if s < 3600:
        return humanize.precisedelta(timedelta(seconds=s), minimum_unit="minutes",
                                     format="%0.0f")
    return humanize.precisedelta(timedelta(seconds=s), minimum_unit="hours",
                                 suppress=["days", "months", "years"], format="%0.1f")


def _hh(h: float | None) -> str:
    return "—" if h is None else f"{h:.1f}"


def _actual(start: float | None, end: float | None) -> str:
    """`  3.0–12.5`, `  3.0–` while it runs, `—` before it starts."""
    if start is None:
        return f"{'—':>5}"
    return f"{_hh(start):>5}–{'' if end is None else _hh(end)}"


@functools.lru_cache(maxsize=4096)
def _cells(start: float, end: float, actual_start: float | None, actual_end: float | None
           ) -> str:
    """The planned and actual hours of a row (the runs of a matrix share a few of each:
    each is written once)."""
    return f"{_hh(start):>5}–{_hh(end):<5}  {_actual(actual_start, actual_end):<11}  "


def _around(r: dict[str, Any]) -> tuple[str, str]:
    """A row's line, but for its id and its cells: the state and tries before the cells,
    the time it took after them, and on a line of its own its exit code and pace."""
    state = r["state"]
    if state == "pending" and r["detail"] in ("retrying", "interrupted", "running"):
        state = "retrying" if r["detail"] == "retrying" else "to resume"
    under = []
    if r["state"] == "failed":
        under.append(r.get("reason") or f"exit code {r['exit_code']}")
    if r.get("progress") or r.get("resumes_from_step") \
            or r.get("observed_s_per_step") is not None:
        under.append(pace_cell(r).lstrip())
    more = f"\n{'':>{PACE_INDENT}}{' · '.join(under)}" if under else ""
    return (f"{state:<9} {r['attempts']:>3}  ",
            f"{took(r['actual_s']) if r['actual_s'] else '—'}{more}")


PACE_INDENT = 6
"""Columns before a row's exit code and pace, on the line under the row."""


def _lines(rows: list[dict[str, Any]], width: int, cut: int) -> list[str]:
    """Each row's line, its id less its first `cut` characters (the campaign's id, said
    once above the table)."""
    out = []
    for r in rows:
        head, tail = _around(r)
        cells = _cells(r["planned_start_h"], r["planned_end_h"], r["actual_start_h"],
                       r["actual_end_h"])
        out.append(f"  {r['id'][cut:]:<{width}}  {head}{cells}{tail}")
    return out


def _table(s: dict[str, Any]) -> list[str]:
    """The runs' table, each row within 80 columns for the shipped presets: the ids less
    the campaign's id they all begin with, said once above it."""
    ids = [r["id"] for r in s["runs"]]
    prefix = f"{s['campaign']}-"
    cut = len(prefix) if ids and all(i.startswith(prefix) for i in ids) else 0
    width = max(3, *(len(i) - cut for i in ids)) if ids else 3
    head = [f"Run ids   {prefix}NAME; the table names NAME"] if cut else []
    return [*head, "", f"  {'run':<{width}}  {'state':<9} {'try':>3}  {'planned h':<11}  "
                       f"{'actual h':<11}  took", *_lines(s["runs"], width, cut)]


def render(s: dict[str, Any]) -> str:
    """The status for a person, from `status.summarize`."""
    counts = " · ".join(f"{n} {g}" for g, n in s["counts"].items())
    lines = [f"{s['campaign']} · working directory {s['workdir']}",
             f"Runs      {counts} (of {len(s['runs'])})",
             f"Executor  {'running' if s['executor_running'] else 'not running'}; "
             f"journal {s['journal']}"]
    if not s["started"]:
        lines.append("Window    not started: no run session yet (`campaign-planner run`)")
    else:
        left = (s["usable_until_h"] - s["now_h"]) * 3600
        lines.append(f"Window    now hour {s['now_h']:.1f} of {s['window_h']:g}; runs must end "
                     f"by hour {s['usable_until_h']:g} "
                     f"({'in ' + span(left) if left > 0 else 'passed'})")
        lines.append(f"Pace      finished runs took {s['pace']:.2f}× their planned time"
                     if s["counts"]["done"] else
                     "Pace      no run has finished yet: planned times assumed")
    behind = s["behind_s"]
    how = "on plan" if abs(behind) < 60 else \
        f"{span(behind)} {'behind' if behind > 0 else 'ahead of'} the plan"
    lines.append(f"Projected last run ends at hour {s['projected_end_h']:.1f}: {how} "
                 f"(planned {s['planned_end_h']:.1f})")
    lines += observed_lines(s)
    late = s["no_longer_fit"]
    if late:
        lines.append(f"Late      {len(late)} run(s) will no longer end by hour "
                     f"{s['usable_until_h']:g}: " + ", ".join(late[:6])
                     + (f" and {len(late) - 6} more" if len(late) > 6 else ""))
    lines += _table(s)
    return "\n".join(lines)

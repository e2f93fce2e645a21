"""Everything checked before a run session starts, and the lock that makes it the only one.

The checks only read; nothing is written until they pass, so bad input leaves the working
directory as it was.
"""

from __future__ import annotations

import fcntl
import math
import os
import re
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path

from planner.errors import InputError
from planner.nofollow import ensure_dir, open_file
from planner.planfile.export import read_plan
from planner.planfile.plan import Plan, plan_id
from planner.run.journal import History, Journal, Workspace, fold, read_events
from planner.run.once import folders_present
from planner.run.params import (
    check_manifest,
    plan_changes,
    plan_fingerprint,
    run_fingerprint,
    run_parameters,
)

MAX_CARD_INDEX = 4095
"""Highest card index `--cards` takes (a machine has far fewer)."""
MAX_POLL_S = 3600.0
MAX_GRACE_S = 86400.0


def load_plan(path: str) -> tuple[Plan, Path]:
    """The plan and its absolute path."""
    p = Path(path).expanduser().absolute()
    if p.is_dir():
        p = p / "plan.toml"
    plan = read_plan(p)
    if not plan.runs:
        raise InputError("the plan has no runs", file=p, field="runs")
    return plan, p


def workspace(plan_path: Path, workdir: str | None) -> Workspace:
    """Paths in the plan resolve against `workdir`, by default the folder that really holds
    the plan: a plan.toml linked into another folder runs where it lives, with the one
    journal and the one executor lock there."""
    wd = Path(workdir).expanduser().absolute() if workdir else plan_path.resolve().parent
    if wd.exists() and not wd.is_dir():
        raise InputError("exists and is not a folder", file=wd, field="--workdir")
    return Workspace(wd)


def only(plan: Plan, text: str) -> Plan:
    """The plan restricted to the runs named in `text` (`--only`), in plan order."""
    wanted = [w.strip() for w in text.split(",")]
    known = {r.id for r in plan.runs}
    for w in wanted:
        if w not in known:
            raise InputError(f"no run {w[:80]!r} in the plan", field="--only")
    keep = set(wanted)
    return plan.model_copy(update={"runs": [r for r in plan.runs if r.id in keep]})


def parse_cards(text: str | None, plan: Plan) -> list[int]:
    """`0,1,2,3` or `0-3` into card indices; default: as many as the plan rents."""
    if text is None:
        cards = list(range(plan.campaign.cards))
    else:
        cards = []
        for part in text.split(","):
            m = re.fullmatch(r"\s*(\d{1,9})\s*(?:-\s*(\d{1,9})\s*)?", part)
            if not m or (m[2] is not None and int(m[2]) < int(m[1])):
                raise InputError(f"expected card indices like 0,1,2,3 or 0-3, got "
                                 f"{text[:60]!r}", field="--cards")
            if int(m[2] or m[1]) > MAX_CARD_INDEX:
                raise InputError(f"card indices go up to {MAX_CARD_INDEX}", field="--cards")
            cards += range(int(m[1]), int(m[2] or m[1]) + 1)
        if len(set(cards)) != len(cards):
            raise InputError(f"a card is listed twice in {text!r}", field="--cards")
    widest = max(plan.runs, key=lambda r: len(r.card))
    if len(widest.card) > len(cards):
        raise InputError(f"run {widest.id} needs {len(widest.card)} cards; only {len(cards)} "
                         f"given", field="--cards")
    return cards


def check_times(poll: float, grace: float) -> None:
    """`--poll` and `--grace`: finite, and within bounds that keep the executor useful."""
    if not (math.isfinite(poll) and 0 < poll <= MAX_POLL_S):
        raise InputError(f"must be above 0 and at most {MAX_POLL_S:g} seconds", field="--poll")
    if not (math.isfinite(grace) and 0 <= grace <= MAX_GRACE_S):
        raise InputError(f"must be between 0 and {MAX_GRACE_S:g} seconds", field="--grace")


def parse_time(text: str | None, field: str = "--window-start") -> float | None:
    """An ISO 8601 option (`--window-start`, `--at`) as a POSIX time, UTC unless it names
    its zone."""
    if text is None:
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"not an ISO 8601 date-time: {text[:60]!r}", field=field) from None
    return (stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)).timestamp()


def history(ws: Workspace) -> History:
    """The journal so far (read only)."""
    return fold(read_events(ws.journal))


def check(plan: Plan, plan_path: Path, ws: Workspace, hist: History, accept: bool,
          present: set[str] | None = None) -> str:
    """Refuse a changed plan (unless accepted) or a run whose checkpoint disagrees with it.
    Returns what changed in the plan ("" when nothing did). `present`: the runs' folders
    there now (`once.folders_present`), when the caller has just listed them."""
    changes = ""
    if hist.plan is not None and hist.plan["fingerprint"] != plan_fingerprint(plan):
        new = {r.id: run_parameters(r) for r in plan.runs}
        changes = plan_changes(hist.plan.get("runs", {}), new)
        if is_revision(plan, hist):
            return f"revision {plan.revision}, replacing {plan.parent} ({changes})"
        if not accept:
            raise InputError(
                f"the plan changed since this journal began ({changes}); pass "
                f"--accept-changed-plan to run it over {ws.journal}", file=plan_path)
    problems = []
    # A run whose checkpoint folder does not exist has neither manifest nor checkpoint
    # there: one listing per parent folder instead of two looks per run keeps a large plan
    # quick (a name there that is no folder holds no manifest either).
    if present is None:
        present = folders_present(ws.workdir, plan.runs)
    for run in plan.runs:
        rec = hist.runs.get(run.id)
        if rec is not None and rec.state == "finished" and rec.fingerprint == run_fingerprint(run):
            continue
        folder = run.checkpoint_dir
        if folder not in present and run.resume.startswith(folder.rstrip("/") + "/"):
            continue
        problem = check_manifest(ws.workdir, run)
        if problem:
            problems.append(problem)
    if problems:
        more = f" (and {len(problems) - 1} more run(s))" if len(problems) > 1 else ""
        raise InputError(problems[0] + more, file=plan_path)
    return changes


def is_revision(plan: Plan, hist: History) -> bool:
    """Whether `plan` is a replan of the plan the journal ran last, or of a later revision
    of it that never ran here (its `run` stopped before journalling it): run without
    asking."""
    if not plan.revision or hist.plan is None:
        return False
    campaign = plan.campaign.id
    ran = hist.plan.get("plan_id") or hist.plan.get("campaign")
    if hist.plan.get("campaign") != campaign:
        return False
    if plan.parent == ran:
        return True
    # Each replan counts one more from the plan it was made from, and a revision's id is
    # its campaign's and its number: the parent lies between the journal's and this one.
    ran_revision = _revision_number(ran, campaign)
    parent_revision = _revision_number(plan.parent, campaign)
    return ran_revision is not None and parent_revision is not None \
        and ran_revision < parent_revision < plan.revision


def _revision_number(plan_id: object, campaign: str) -> int | None:
    """The revision a plan id names (0 for the campaign's own), or None for another's."""
    if plan_id == campaign:
        return 0
    if not isinstance(plan_id, str) or not plan_id.startswith(f"{campaign}-r"):
        return None
    number = plan_id[len(campaign) + 2:]
    return int(number) if number.isascii() and number.isdigit() and len(number) < 8 else None


@contextmanager
def locked(ws: Workspace) -> Iterator[None]:
    """Hold the working directory's executor lock; refuse when another executor has it."""
    try:
        ensure_dir(ws.root, ws.workdir)
        fd = open_file(ws.lock, os.O_RDWR | os.O_CREAT)
    except OSError as exc:
        raise InputError(f"cannot create the executor's lock: {exc.strerror or exc}",
                         file=ws.lock) from None
    try:
        for tries_left in range(10, -1, -1):
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                # `status` probes the lock for an instant; a real holder keeps it.
                if tries_left:
                    time.sleep(0.05)
                    continue
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
                raise InputError(f"another executor (pid {holder}) is running this working "
                                 f"directory", file=ws.workdir) from None
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        except OSError as exc:  # a full disk: the lock is held, its holder's pid not written
            raise InputError(f"cannot write the executor's lock: {exc.strerror or exc}",
                             file=ws.lock) from None
        yield
    finally:
        os.close(fd)


def begin(journal: Journal, hist: History, plan: Plan, plan_path: Path, changes: str,
          cards: list[int], window_start: float | None) -> None:
    """Journal the plan (first time, or an accepted change) and this executor's start."""
    fp = plan_fingerprint(plan)
    if hist.plan is None or hist.plan["fingerprint"] != fp:
        hist.apply(journal.append(
            "plan", fingerprint=fp, path=str(plan_path), campaign=plan.campaign.id,
            plan_id=plan_id(plan), revision=plan.revision, parent=plan.parent,
            accepted_change=changes, runs={r.id: run_parameters(r) for r in plan.runs}))
    # Unless told, the first session is taken to start when the plan's first run may.
    start = window_start or time.time() - plan.campaign.usable_from_h * 3600
    hist.apply(journal.append(
        "executor", pid=os.getpid(), host=socket.gethostname(), cards=cards,
        window_start=start, window_explicit=window_start is not None))

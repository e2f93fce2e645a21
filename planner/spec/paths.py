"""Bounds on the names and paths a plan carries, so every file named after a run fits the
filesystem's limits and nothing a plan names lands outside the folders it means.

Checked when a preset loads and a plan is made, and again whenever a plan.toml is read:
an edited plan is input like any other.
"""

from __future__ import annotations

import re

NAME_CHARS = 64
"""Longest campaign name or id, variant name or control name."""
RUN_ID_CHARS = 200
"""Longest run id: files are named `<run id>` plus at most 55 characters (a manifest's
temporary file, an exit record) within the usual 255-byte limit of a file name."""
ROOT_CHARS = 1024
"""Longest checkpoint or export root; a run's paths add its run id and a few characters,
well within the usual 4096-byte limit of a path."""
COMPONENT_CHARS = 255
"""Longest single folder name in a root."""
RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._=-]*")
"""A run id: letters, digits, `.`, `_`, `-` and `=` (a swept variant's `lr=0.0003`)."""


def root_problem(root: str, limit: int = ROOT_CHARS) -> str | None:
    """Why `root` cannot hold checkpoints or exports, or None. Absolute roots (a big data
    disk) are allowed; `..` is not, anywhere."""
    if not root or not root.strip():
        return "must not be empty"
    if "\0" in root or "\n" in root or "\r" in root:
        return "must not contain NUL or line breaks"
    # A character is at most 4 bytes: a short path (every path of most plans, each read
    # again whenever a plan of 100,000 runs is) is within both byte limits as it stands.
    short = len(root) * 4 <= min(limit, COMPONENT_CHARS)
    if not short and len(root.encode()) > limit:
        return f"longer than {limit} bytes"
    # The components between slashes: a path's parts, with the empty and `.` ones that
    # PurePosixPath drops (never long, never `..`).
    parts = root.split("/") if ".." in root else ()
    if ".." in parts:
        return "must not contain `..`: runs would write outside the folder named"
    if not short and any(len(p.encode()) > COMPONENT_CHARS for p in root.split("/")):
        return f"a folder name is longer than {COMPONENT_CHARS} bytes"
    return None


def check_root(root: str) -> str:
    """`root`, if it may hold checkpoints or exports (a pydantic validator body)."""
    problem = root_problem(root)
    if problem:
        raise ValueError(problem)
    return root


def run_id_problem(run_id: str) -> str | None:
    """Why `run_id` cannot name a run's files, or None."""
    if not RUN_ID.fullmatch(run_id):
        return f"{run_id[:60]!r} is not a run id (letters, digits, `.`, `_`, `-` and `=`)"
    if len(run_id) > RUN_ID_CHARS:
        return (f"run id {run_id[:40]}… is {len(run_id)} characters; at most {RUN_ID_CHARS} "
                "fit every file named after it")
    return None


def check_run_id(run_id: str) -> str:
    """`run_id`, if it may name a run's files (a pydantic validator body)."""
    problem = run_id_problem(run_id)
    if problem:
        raise ValueError(problem)
    return run_id


def check_run_path(path: str) -> str:
    """A run's checkpoint folder, resume path or export name read from a plan."""
    problem = root_problem(path, ROOT_CHARS + 2 * RUN_ID_CHARS)
    if problem:
        raise ValueError(problem)
    return path

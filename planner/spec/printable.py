"""One rule for text that reaches a terminal: a control character in a value is refused
where the value has no use for one (names, devices, notes, versions: `control_problem`,
checked as every input model loads, as plan.toml is read back, and before it is written, so
the cache of checked plans never holds what a reading refuses), and shown escaped where the
value may hold one (a command's script, an error quoting what a file holds: `shown`).
"""

from __future__ import annotations

import re

CONTROL = re.compile(r"[\x00-\x1f\x7f]")
"""The characters refused in text: those TOML writes only as an escape (C0 and DEL)."""
_ACTING = re.compile(r"[\x00-\x1f\x7f-\x9f]")
PROBLEM = "holds a control character (a line break, a tab or an escape)"
"""Why text holding one is refused, in words."""
_SHORT = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def control_problem(text: str) -> str | None:
    """Why `text` may not stand in a name, a device or a note, or None."""
    return PROBLEM if CONTROL.search(text) else None


def _escape(found: re.Match[str]) -> str:
    c = found.group()
    return _SHORT.get(c) or f"\\x{ord(c):02x}"


def shown(text: str) -> str:
    """`text` with every character a terminal may act on (C0, DEL, C1) written as an
    escape (`\\x1b`, `\\n`): printed, it is one line of text, never a command to the
    terminal."""
    return _ACTING.sub(_escape, text)

"""What every command's arguments share: the parser that turns usage errors into one line
and exit code 2, and the options more than one command takes."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.spec.preset import Contact


class Parser(argparse.ArgumentParser):
    """argparse, with usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(message, field=self.prog.split()[-1] if " " in self.prog else "")


def created_at(text: str | None) -> datetime | None:
    """`--created` as an aware date-time (UTC when no zone is given), or None."""
    if text is None:
        return None
    try:
        stamp = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"not an ISO 8601 date-time: {text!r}", field="--created") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=UTC)


def contact_of(name: str | None, email: str | None) -> Contact | None:
    """The order's contact from `--contact-name` and `--contact-email`, or None."""
    from planner.planning.order import make_contact

    return make_contact(name, email, name_field="--contact-name", email_field="--contact-email",
                        both="give both --contact-name and --contact-email")

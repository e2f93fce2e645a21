"""What every command's arguments share: the parser that turns usage errors into one line
and exit code 2, and the options more than one command takes."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.spec.overrides import Overrides
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
    from planner.planfile.order import make_contact

    return make_contact(name, email, name_field="--contact-name", email_field="--contact-email",
                        both="give both --contact-name and --contact-email")


WHAT_IF = ("the preset's rental and seeds, changed for this command without editing the "
           "file; the plan's assumptions name each (\"cards 4 → 8 (command line)\"), and "
           "the files equal those of the preset edited the same way")
"""The help of the what-if options."""


def add_what_if(p: argparse.ArgumentParser, *, cards: bool = True, note: str = "",
                days: str = "") -> argparse._ArgumentGroup:
    """The what-if options `--card`, `--cards` (unless the command has its own), `--days`
    (its help `days` when the command reads windows its own way), `--hours` and `--seeds`,
    read back by `what_if`."""
    g = p.add_argument_group("what if", WHAT_IF + (f"; {note}" if note else ""))
    g.add_argument("--card", metavar="KEY", help="the card model (a catalog key)")
    if cards:
        g.add_argument("--cards", metavar="N", help="the number of cards rented")
    g.add_argument("--days", metavar="D",
                   help=days or "the window in days (3, 7 or 30 are ordered as such; other "
                                "numbers as D × 24 hours)")
    g.add_argument("--hours", metavar="H", help="the window in hours (instead of --days)")
    g.add_argument("--seeds", metavar="N|A,B,...",
                   help="training: N seeds 0..N-1, or the seeds listed (a single seed S: "
                        "`S,`)")
    return g


def _number(text: str, flag: str, kind: type[int] | type[float]) -> int | float:
    try:
        return kind(text.strip().replace("_", ""))
    except ValueError:
        what = "a whole number" if kind is int else "a number"
        raise InputError(f"not {what}: {text[:40]!r}", field=flag) from None


def parse_seeds(text: str, flag: str = "--seeds") -> tuple[int, ...]:
    """`N` (seeds 0..N-1) or a comma-separated list (`0,1,5`; `5,` for seed 5 alone)."""
    from planner.spec.training import MAX_SEEDS

    if "," not in text:
        if not text.strip():
            raise InputError("no seed given: write N (seeds 0..N-1) or a list such as 0,1,5",
                             field=flag)
        n = int(_number(text, flag, int))
        if not 1 <= n <= MAX_SEEDS:
            raise InputError(f"{n} seeds: give from 1 to {MAX_SEEDS} (seeds 0..N-1), or "
                             "list them", field=flag)
        return tuple(range(n))
    items = [t.strip() for t in text.split(",")]
    if items and not items[-1]:
        items.pop()  # `5,`: the one seed 5
    if not items or any(not t for t in items):
        raise InputError(f"an empty item in {text[:60]!r}: list seeds as 0,1,5", field=flag)
    if len(items) > MAX_SEEDS:
        raise InputError(f"{len(items)} seeds: at most {MAX_SEEDS}", field=flag)
    return tuple(int(_number(t, flag, int)) for t in items)


def split_cards(text: str | None) -> tuple[int | None, str | None]:
    """`--cards` of a command that also takes card models there (`compare`, `advise`): a
    whole number is the count rented, anything else the comma-separated card models."""
    if text is not None and text.strip().isdigit():
        return int(text.strip()), None
    return None, text


def what_if(args: argparse.Namespace, *,
            count: int | Literal["args"] | None = "args") -> Overrides:
    """The overrides the what-if options ask for. `count`: the card count when the command
    reads `--cards` itself (see `split_cards`); by default `--cards N` from `args`."""
    from planner.spec.overrides import Overrides

    if count == "args":
        count = (int(_number(args.cards, "--cards", int))
                 if getattr(args, "cards", None) is not None else None)
    return Overrides(
        card=args.card.strip() if args.card is not None else None,
        cards=count,
        days=float(_number(args.days, "--days", float)) if args.days is not None else None,
        hours=float(_number(args.hours, "--hours", float)) if args.hours is not None else None,
        seeds=parse_seeds(args.seeds) if args.seeds is not None else None,
    )

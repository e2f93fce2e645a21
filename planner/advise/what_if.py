"""The what-if flags on `advise`, which searches the card, the count and the window itself:
`--card`, `--cards N` and `--days`/`--hours` pin that part of the search to one value (as
`--cards A`, `--counts N` and `--windows D` would), `--seeds` changes the campaign searched.
Every override is also applied to the preset, so an exported option names it in its plan
and equals what the preset edited the same way exports."""

from __future__ import annotations

from planner.advise.model import Space, parse_windows
from planner.errors import InputError
from planner.spec.overrides import Overrides

DEFAULT_COUNTS = tuple(range(1, 9))
DEFAULT_WINDOWS = (3, 7, 30)


def in_days(o: Overrides) -> Overrides:
    """The overrides with a window in hours given in days: advise orders whole days."""
    if o.hours is None:
        return o
    if o.days is not None:
        raise InputError("give --days or --hours, not both", field="--days")
    days = o.hours / 24
    if not o.hours > 0 or days != int(days):
        raise InputError(f"advise orders whole days: {o.hours:g} h is not a multiple of 24",
                         field="--hours")
    return o._replace(days=float(int(days)), hours=None)


def pinned(cards: tuple[str, ...] | None, counts: tuple[int, ...] | None,
           windows: tuple[int, ...] | None, o: Overrides) -> Space:
    """The search space with the dimensions the overrides fix pinned to their value;
    None: that option was not given. Pinning one that is also given is refused."""
    o = in_days(o)
    if o.card is not None:
        if cards is not None:
            raise InputError("give --card KEY or --cards A,B,... (the models to search), "
                             "not both", field="--card")
        cards = (o.card,)
    if o.cards is not None:
        if counts is not None:
            raise InputError("give --cards N or --counts, not both", field="--cards")
        counts = (o.cards,)
    if o.days is not None:
        if windows is not None:
            raise InputError("give --days/--hours or --windows, not both", field="--days")
        if o.days != int(o.days):
            raise InputError(f"advise orders whole days, not {o.days:g}", field="--days")
        windows = parse_windows(str(int(o.days)), field="--days")
    return Space(cards=cards, counts=counts or DEFAULT_COUNTS,
                 windows=windows or DEFAULT_WINDOWS)

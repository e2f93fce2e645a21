"""The rental order that matches a plan."""

import math
from typing import Literal

from pydantic import ValidationError

from planner.errors import InputError
from planner.planfile.plan import Plan
from planner.spec.base import Strict
from planner.spec.catalog import Card
from planner.spec.preset import Contact, Preset

STANDARD_DAYS = (3, 7, 30)


class Environment(Strict):
    """Software wanted on the rented machine, and what the card requires of it."""

    image: str
    """Operating-system image."""
    cuda: str
    """CUDA version wanted."""
    pytorch: str
    """PyTorch version wanted."""
    packages: list[str]
    """Extra packages."""
    compute_capability: str
    """Compute capability of the card, e.g. sm_86."""
    min_cuda: str
    """First CUDA toolkit that targets the card."""
    min_pytorch: str
    """First PyTorch with kernels for the card."""


class Order(Strict):
    """What to rent."""

    plan_id: str
    """Campaign id of the plan this order runs."""
    status: Literal["ready", "draft"]
    """`draft` until the contact is filled in."""
    card: str
    """Card model (catalog key)."""
    card_name: str
    """Card model in full."""
    cards: int
    """Number of cards."""
    duration_days: int
    """Rental duration in days."""
    environment: Environment
    """Software environment."""
    contact: Contact | None = None
    """Customer contact."""
    payment: Literal["crypto"] = "crypto"
    """Payment method; followed in the customer's order space."""
    price_per_card_hour: float | None = None
    """Price of one card-hour, when known."""
    estimated_total: float | None = None
    """Price × card-hours, when a price is known."""
    currency: str = "USD"
    """Currency."""


def make_contact(name: str | None, email: str | None, *, name_field: str, email_field: str,
                 both: str) -> Contact | None:
    """The order's contact from a name and an email: None when both are empty (the order is
    then a draft); an InputError naming `name_field` / `email_field` when only one is given
    (message `both`) or the email is not valid."""
    name, email = (name or "").strip(), (email or "").strip()
    if not name and not email:
        return None
    if not name or not email:
        raise InputError(both, field=name_field if not name else email_field)
    try:
        return Contact(name=name, email=email)
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        field = name_field if first["loc"] and first["loc"][0] == "name" else email_field
        raise InputError(first["msg"].removeprefix("Value error, "), field=field) from None


def order_days(hours: float) -> int:
    """The rental duration to order for a window: the smallest standard duration covering
    it, or whole days beyond 30."""
    for days in STANDARD_DAYS:
        if hours <= days * 24:
            return days
    return math.ceil(hours / 24)


def make_order(preset: Preset, plan: Plan, card: Card,
               contact: Contact | None = None) -> tuple[Order, list[str]]:
    """The order for `plan`, and warnings about it (draft, rounded duration)."""
    spec = preset.order
    who = contact or spec.contact
    warnings: list[str] = []
    days = order_days(plan.campaign.window_hours)
    if plan.campaign.window_hours != days * 24:
        warnings.append(f"the {plan.campaign.window_hours:g} h window is ordered as {days} "
                        f"days: {days * 24 - plan.campaign.window_hours:g} h more than planned")
    if who is None:
        warnings.append("the order has no contact: it is written as a draft; set "
                        "[order.contact] or pass --contact-name and --contact-email")
    env = Environment(image=spec.image, cuda=spec.cuda, pytorch=spec.pytorch,
                      packages=list(spec.packages), compute_capability=card.sm,
                      min_cuda=card.min_cuda, min_pytorch=card.min_pytorch)
    return Order(
        plan_id=plan.campaign.id, status="ready" if who else "draft", card=plan.campaign.card,
        card_name=card.name, cards=plan.campaign.cards, duration_days=days, environment=env,
        contact=who, price_per_card_hour=plan.campaign.price_per_card_hour,
        estimated_total=(None if plan.campaign.price_per_card_hour is None else round(
            plan.campaign.price_per_card_hour * plan.campaign.cards * days * 24, 2)),
        currency=plan.campaign.currency,
    ), warnings

"""The preset schema: a campaign to plan, as read from TOML.

Every model is strict: unknown keys are refused and each field carries a docstring that
becomes its JSON Schema description and its help text.
"""

import re
from typing import Literal, Self

from pydantic import Field, field_validator, model_validator

from planner.spec import bounds
from planner.spec.base import SLUG, Strict
from planner.spec.costs import anchor_figures
from planner.spec.embedding import Embedding, TokenLengths
from planner.spec.paths import NAME_CHARS
from planner.spec.training import (
    Adaptation,
    Baseline,
    Costed,
    FactorValue,
    Robustness,
    Training,
    Variant,
)

__all__ = [
    "Adaptation", "Baseline", "Campaign", "Contact", "Costed", "Embedding", "FactorValue",
    "Kind", "OrderSpec", "Overheads", "Preset", "Robustness", "TokenLengths", "Training",
    "Variant",
]
Kind = Literal["ablation", "embedding", "adaptation"]

class Campaign(Strict):
    """What is rented, for how long, and what kind of campaign runs on it."""

    name: str = Field(pattern=SLUG, max_length=NAME_CHARS)
    """Campaign name: letters, digits, `.`, `_` and `-`; at most 64 characters."""
    id: str | None = Field(default=None, pattern=SLUG, max_length=NAME_CHARS)
    """Stable campaign id carried by every run id; derived from the name and preset when unset."""
    kind: Kind
    """`ablation`, `embedding` or `adaptation`; the preset's matching section describes it."""
    window_days: Literal[3, 7, 30] | None = None
    """Rental window in days: 3, 7 or 30. Give this or `window_hours`."""
    window_hours: float | None = Field(default=None, gt=0, le=bounds.HOURS)
    """A custom rental window in hours, instead of `window_days`."""
    card: str
    """Card model, a catalog key (see `campaign-planner cards`)."""
    cards: int = Field(ge=1, le=4096)
    """Number of cards rented."""
    price_per_card_hour: float | None = Field(default=None, ge=0, le=bounds.PRICE)
    """Price of one card-hour, when known; overrides a price in the catalog."""
    currency: str = "USD"
    """Currency of the price."""
    price_card: str = ""
    """The card the price is for (empty: the campaign's card, written out when saved); on
    any other card the catalog's price applies."""

    @model_validator(mode="after")
    def _one_window(self) -> Self:
        if (self.window_days is None) == (self.window_hours is None):
            raise ValueError(
                "@window_days: give exactly one of `window_days` (3, 7 or 30) or `window_hours`")
        return self

    @property
    def hours(self) -> float:
        """The rental window in hours."""
        return self.window_hours if self.window_hours is not None else 24.0 * self.window_days  # type: ignore[operator]


class Overheads(Strict):
    """Time the window pays for besides the work itself."""

    stack_check_hours: float = Field(default=1.0, ge=0, le=bounds.HOURS)
    """Reserved at the start of the window to check drivers, CUDA, PyTorch and a resume."""
    startup_minutes: float = Field(default=5.0, ge=0, le=bounds.MINUTES)
    """Per run: process start, data loading, model build."""
    eval_every_steps: int = Field(default=0, ge=0, le=bounds.STEPS)
    """Evaluate every this many steps (0: only once, at the end of the run)."""
    eval_minutes: float = Field(default=0.0, ge=0, le=bounds.MINUTES)
    """Duration of one evaluation."""
    checkpoint_every_steps: int = Field(default=0, ge=0, le=bounds.STEPS)
    """Write a checkpoint every this many steps (0: only at the end of the run)."""
    checkpoint_write_minutes: float = Field(default=0.0, ge=0, le=bounds.MINUTES)
    """Duration of one checkpoint write."""
    safety_margin_hours: float = Field(default=0.0, ge=0, le=bounds.HOURS)
    """Reserved at the end of the window: nothing is planned to end inside it."""
    memory_margin_gib: float = Field(default=2.0, ge=0, le=bounds.GIB)
    """Device memory kept free below the card's size (allocator fragmentation, spikes)."""


class Contact(Strict):
    """Who the order is for."""

    name: str = Field(min_length=1)
    """Customer name."""
    email: str
    """Customer email address."""

    @field_validator("email")
    @classmethod
    def _email(cls, v: str) -> str:
        if not re.fullmatch(r"[^@\s]+@[^@\s]+\.[A-Za-z]{2,}", v):
            raise ValueError(f"not a valid email address: {v!r}")
        return v


class OrderSpec(Strict):
    """The software environment wanted on the rented machine, and who orders."""

    image: str = "ubuntu-22.04"
    """Operating-system image."""
    cuda: str = Field(default="12.6", pattern=bounds.VERSION_DIGITS)
    """CUDA version wanted."""
    pytorch: str = Field(default="2.7", pattern=r"^\d{1,4}\.\d{1,4}(\.\d{1,4})?$")
    """PyTorch version wanted."""
    packages: list[str] = []
    """Extra packages to install."""
    contact: Contact | None = None
    """Customer contact; without it the order is written as a draft."""


class Preset(Strict):
    """A campaign to plan: the rental, its overheads, its workload, and the order."""

    campaign: Campaign
    """The rental and the campaign kind."""
    overheads: Overheads = Overheads.model_construct()
    """Time the window pays for besides the work."""
    ablation: Training | None = None
    """The workload when `campaign.kind = "ablation"`."""
    adaptation: Adaptation | None = None
    """The workload when `campaign.kind = "adaptation"`."""
    embedding: Embedding | None = None
    """The workload when `campaign.kind = "embedding"`."""
    order: OrderSpec = OrderSpec.model_construct()
    """The software environment and contact for the order."""

    @model_validator(mode="before")
    @classmethod
    def _anchor(cls, data: object) -> object:
        # Figures and a price that name no card are the campaign's card's, fixed here once:
        # changing the card later changes only the card.
        if not isinstance(data, dict):
            return data
        c = data.get("campaign")
        card = c.get("card") if isinstance(c, dict) else getattr(c, "card", None)
        if not isinstance(card, str):
            return data
        out = dict(data)
        if (isinstance(c, dict) and c.get("price_per_card_hour") is not None
                and not c.get("price_card")):
            out["campaign"] = {**c, "price_card": card}
        for kind in ("ablation", "adaptation", "embedding"):
            if out.get(kind) is not None:
                out[kind] = anchor_figures(out[kind], card)
        return out

    @model_validator(mode="after")
    def _section_matches_kind(self) -> Self:
        kind = self.campaign.kind
        present = [k for k in ("ablation", "adaptation", "embedding") if getattr(self, k)]
        if kind not in present:
            raise ValueError(
                f"@campaign.kind: is {kind!r} but the preset has no [{kind}] section"
            )
        others = [k for k in present if k != kind]
        if others:
            raise ValueError(
                f"@campaign.kind: is {kind!r} but the preset also has a [{others[0]}] section"
            )
        if self.embedding and self.embedding.versions * self.campaign.cards > \
                bounds.EMBEDDING_RUNS:
            raise ValueError(f"@embedding.versions: versions × cards would make more than "
                             f"{bounds.EMBEDDING_RUNS} runs")
        return self

    @property
    def training(self) -> Training | None:
        """The training workload (ablation or adaptation), if any."""
        return self.ablation or self.adaptation

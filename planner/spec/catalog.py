"""The card catalog: card models and their facts, shipped as `presets/cards.toml`."""

from pathlib import Path
from typing import Literal

from pydantic import Field, ValidationError, field_validator

from planner.errors import InputError, from_validation
from planner.spec import bounds
from planner.spec.base import Strict
from planner.spec.shipped import shipped
from planner.tomlio import parse_toml, read_toml

Dtype = Literal["fp32", "tf32", "bf16", "fp16", "fp8"]
CLOUD_NAME = r"^([A-Za-z0-9][A-Za-z0-9-]{0,63})?$"
"""A launcher's accelerator name: letters, digits and `-`, as both tools spell them."""


class Card(Strict):
    """One card model and its datasheet facts (dense tensor figures)."""

    name: str
    """Full product name."""
    short: str = ""
    """A short name that still tells the card apart, e.g. `A100 PCIe 40GB` (the full name
    less `NVIDIA ` when not given)."""
    architecture: str
    """GPU architecture, e.g. Ampere, Ada Lovelace, Hopper."""
    chip: str = ""
    """GPU die, e.g. GA102."""
    compute_capability: str = Field(pattern=bounds.VERSION_DIGITS)
    """CUDA compute capability, e.g. "8.6" (sm_86)."""
    memory_gib: float = Field(ge=bounds.RATE_MIN, le=bounds.CARD_GIB)
    """Device memory, nominal size as sold, treated as GiB."""
    memory_type: str = ""
    """Memory technology, e.g. GDDR6, HBM3."""
    bandwidth_gbps: float = Field(ge=bounds.RATE_MIN, le=bounds.BANDWIDTH_GBPS)
    """Memory bandwidth in decimal GB/s."""
    fp32_tflops: float = Field(ge=bounds.RATE_MIN, le=bounds.TFLOPS)
    """Plain (non-tensor) FP32 TFLOPS."""
    tf32_tflops: float = Field(ge=0, le=bounds.TFLOPS)
    """Dense TF32 tensor TFLOPS."""
    bf16_tflops: float = Field(ge=0, le=bounds.TFLOPS)
    """Dense BF16/FP16 tensor TFLOPS with FP32 accumulate."""
    fp8_tflops: float = Field(default=0.0, ge=0, le=bounds.TFLOPS)
    """Dense FP8 tensor TFLOPS; 0 where the card has no FP8 tensor cores."""
    tdp_w: float = Field(ge=bounds.RATE_MIN, le=bounds.WATTS)
    """Board power in watts."""
    interconnect: str = ""
    """Card-to-card and host links."""
    usable_memory_gib: float | None = Field(default=None, ge=bounds.RATE_MIN,
                                             le=bounds.CARD_GIB)
    """Memory one process can allocate, as the driver reports it (torch's `total_memory`):
    below `memory_gib` by the driver's reservation and, with ECC on, by the check bits. None:
    taken as `memory_gib` (a user's card)."""
    context_gib: float = Field(default=0.75, ge=0, le=bounds.CARD_GIB)
    """Device memory each process spends outside torch's allocator (CUDA context, loaded
    kernels, library handles): a memory cap does not cover it."""
    memory_source: str = ""
    """Where `usable_memory_gib` comes from, and in which ECC state."""
    pcie_gbps: float = Field(default=0.0, ge=0, le=bounds.BANDWIDTH_GBPS)
    """Host link bandwidth, bidirectional total in GB/s (datasheet)."""
    nvlink_gbps: float = Field(default=0.0, ge=0, le=bounds.BANDWIDTH_GBPS)
    """NVLink bandwidth per card, bidirectional total in GB/s; 0 without NVLink."""
    nvlink_cards: int = Field(default=0, ge=0, le=4096)
    """Most cards NVLink joins: 2 for a bridge, 8 for an HGX board; more go over PCIe."""
    min_cuda: str = Field(pattern=bounds.VERSION_DIGITS)
    """First CUDA toolkit that targets this compute capability."""
    min_pytorch: str = Field(pattern=bounds.VERSION_DIGITS)
    """First PyTorch release whose wheels carry kernels for this card."""
    host_cpus_per_card: int | None = Field(default=None, ge=1, le=4096)
    """CPUs per card of the smallest machine the sources list with this card: a SLURM
    task's CPU request per card by default. None: not known (the export's fallback)."""
    host_memory_gib_per_card: float | None = Field(default=None, ge=1, le=bounds.GIB)
    """Host memory (GiB) per card of that machine; a SLURM task asks for 3/4 of it by
    default. None: not known."""
    host_source: str = ""
    """Which machine the two `host_` figures come from, and where it is listed."""
    price_per_card_hour: float | None = Field(default=None, ge=0, le=bounds.PRICE)
    """Price of one card-hour, when the user's own catalog gives one; never shipped."""
    sky_name: str = Field(default="", pattern=CLOUD_NAME)
    """The card's accelerator name in SkyPilot (`resources.accelerators`, e.g. `A6000`);
    empty when SkyPilot names none for it."""
    dstack_name: str = Field(default="", pattern=CLOUD_NAME)
    """The card's GPU name in dstack (`resources.gpu`, e.g. `A6000`), which dstack pairs
    with the memory; empty when dstack names none for it."""
    uncertain: list[str] = []
    """Fields whose value rests on a derivation or a single weak source."""
    sources: list[str] = []
    """Source keys in the project's GPU reference."""

    @field_validator("tf32_tflops", "bf16_tflops", "fp8_tflops", "pcie_gbps", "nvlink_gbps")
    @classmethod
    def _zero_or_rate(cls, v: float) -> float:
        if 0 < v < bounds.RATE_MIN:
            raise ValueError(f"0 (none) or at least {bounds.RATE_MIN:g}: a rate this small "
                             "makes every time computed from it overflow")
        return v

    @property
    def allocatable_gib(self) -> float:
        """GiB torch's allocator can have on this card: usable memory less the context."""
        return (self.usable_memory_gib or self.memory_gib) - self.context_gib

    @property
    def short_name(self) -> str:
        """`short`, or the full name without the maker's prefix."""
        return self.short or self.name.removeprefix("NVIDIA ")

    @property
    def sm(self) -> str:
        """The architecture tag, e.g. sm_86."""
        return "sm_" + self.compute_capability.replace(".", "")

    def peak_tflops(self, dtype: Dtype) -> float:
        """Dense peak TFLOPS for a training dtype."""
        return {
            "fp32": self.fp32_tflops,
            "tf32": self.tf32_tflops,
            "bf16": self.bf16_tflops,
            "fp16": self.bf16_tflops,
            "fp8": self.fp8_tflops,
        }[dtype]

    def compute_tflops(self, dtype: Dtype) -> float:
        """The peak a step in `dtype` runs at: the dtype's, else the BF16 tensor figure, else
        plain FP32 (a card without tensor cores), which is never 0."""
        return self.peak_tflops(dtype) or self.bf16_tflops or self.fp32_tflops


class Catalog(Strict):
    """Card models by key (e.g. `a6000`)."""

    cards: dict[str, Card]
    """Card models by catalog key."""

    @field_validator("cards")
    @classmethod
    def _keys(cls, v: dict[str, Card]) -> dict[str, Card]:
        if not v:
            raise ValueError("the catalog lists no card")
        return v

    def get(self, key: str, *, file: str | Path | None = None, field: str = "") -> Card:
        """The card for `key`, or an InputError listing the known keys."""
        try:
            return self.cards[key]
        except KeyError:
            known = ", ".join(sorted(self.cards))
            raise InputError(f"unknown card {key!r}; known cards: {known}", file=file,
                             field=field) from None

    def merged(self, other: "Catalog") -> "Catalog":
        """This catalog with `other`'s cards added or replacing same-key cards."""
        return Catalog(cards={**self.cards, **other.cards})


def shipped_catalog_path() -> str:
    """Where the shipped catalog lives (for messages)."""
    return str(shipped("cards.toml"))


def _parse(data: dict, file: str | Path) -> Catalog:
    try:
        return Catalog.model_validate(data)
    except ValidationError as exc:
        raise from_validation(exc, file) from None


_SHIPPED: Catalog | None = None


def load_catalog(extra: str | Path | None = None) -> Catalog:
    """The shipped catalog, merged with a user's catalog file when one is given."""
    global _SHIPPED
    if _SHIPPED is None:
        path = shipped_catalog_path()
        _SHIPPED = _parse(parse_toml(shipped("cards.toml").read_bytes(), path), path)
    if extra is None:
        return _SHIPPED
    user = read_toml(extra)
    # A user's file may price shipped cards without repeating their facts.
    cards = user.get("cards")
    if isinstance(cards, dict):
        filled: dict[str, object] = {}
        for key, value in cards.items():
            if isinstance(value, dict) and key in _SHIPPED.cards and set(value) <= {
                "price_per_card_hour"
            }:
                filled[key] = {**_SHIPPED.cards[key].model_dump(), **value}
            else:
                filled[key] = value
        user = {**user, "cards": filled}
    return _SHIPPED.merged(_parse(user, extra))

"""Runs on several cards: the all-reduce term and DDP's memory, from the catalog's links.

Nothing here is measured: `measure` runs one card. A data-parallel run (torch DDP) adds, per
optimizer step, one all-reduce of the gradients, and per card the reducer's buckets and
NCCL's buffers:

- **Time.** A ring all-reduce sends and receives 2(n−1)/n × the gradient bytes through each
  card's link (the "bus bandwidth" factor of NCCL's nccl-tests, doc/PERFORMANCE.md), so it
  takes 2(n−1)/n × bytes ÷ the link's bandwidth in one direction (half the datasheet's
  bidirectional total). The link is NVLink when the card has it and the run's cards are no
  more than it joins (a bridge joins 2, an HGX board 8), PCIe otherwise. Gradients are fp32
  (`GRAD_BYTES`): autocast keeps fp32 master weights. DDP overlaps bucket all-reduces with
  the backward pass: a step waits for the share `allreduce_exposed` of the ring time fitted
  on llm-foundry's per-GPU throughput at several GPU counts (`presets/efficiency.toml`), and
  at least for the last bucket, which only starts when the backward pass ends.
- **Memory.** DDP's reducer copies gradients into flat buckets (`bucket_cap_mb` = 25 each)
  that together hold one more copy of the gradients, unless `gradient_as_bucket_view=True`
  (torch.nn.parallel.DistributedDataParallel docs); NCCL's buffers (NCCL_BUFFSIZE = 4 MiB per
  channel and peer, NCCL environment-variable docs) are covered by `NCCL_GIB`.
"""

from __future__ import annotations

from typing import NamedTuple

from planner.spec.catalog import Card

GIB = 2**30
BUCKET_BYTES = 25 * 2**20
"""DDP's `bucket_cap_mb` default: the last bucket's all-reduce cannot overlap."""
GRAD_BYTES = 4
"""Bytes per gradient element (fp32 master weights under autocast)."""
NCCL_GIB = 0.5
"""NCCL's communication buffers per card (outside torch's allocator)."""


class MultiCard(NamedTuple):
    """What running on `cards` cards adds to a one-card step."""

    cards: int
    link: str
    link_gbps: float
    """Bandwidth in one direction, decimal GB/s."""
    gradient_gib: float
    allreduce_s: float
    """The ring all-reduce of every gradient, overlap left aside."""
    exposed_s: float
    """What a step waits for of it (added to the one-card step time)."""
    bucket_gib: float
    nccl_gib: float

    @property
    def extra_gib(self) -> float:
        """Memory per card on top of the one-card peak."""
        return self.bucket_gib + self.nccl_gib

    def time_note(self) -> str:
        """How the all-reduce term was reckoned."""
        return (f"+ {self.exposed_s:.3g} s per step: ring all-reduce of "
                f"{self.gradient_gib:.2f} GiB fp32 gradients across {self.cards} cards over "
                f"{self.link} ({self.link_gbps:g} GB/s each way, × 2(n−1)/n) takes "
                f"{self.allreduce_s:.3g} s, the rest hidden behind the backward pass (exposed "
                "share fitted on published per-GPU throughput; analytic, not measured on "
                "several cards)")

    def memory_note(self) -> str:
        """How the extra memory was reckoned."""
        return (f"+ {self.extra_gib:.2f} GiB per card: DDP gradient buckets "
                f"{self.bucket_gib:.2f} GiB and NCCL buffers {self.nccl_gib:g} GiB (analytic)")


def link_of(card: Card, cards: int) -> tuple[str, float]:
    """The link a run of `cards` cards all-reduces over, and its one-way GB/s."""
    if card.nvlink_gbps and cards <= card.nvlink_cards:
        return "NVLink", card.nvlink_gbps / 2
    return "PCIe", (card.pcie_gbps or 64.0) / 2


def multi_card(card: Card, cards: int, trainable_params: int) -> MultiCard | None:
    """The all-reduce and memory terms of a run on `cards` cards; None for one card."""
    if cards <= 1:
        return None
    from planner.figures.efficiency import load_fit  # only for runs on several cards

    link, gbps = link_of(card, cards)
    grad_bytes = float(trainable_params) * GRAD_BYTES
    ring = 2.0 * (cards - 1) / cards / (gbps * 1e9)
    seconds = ring * grad_bytes
    exposed = max(load_fit().allreduce_exposed * seconds,
                  ring * min(grad_bytes, BUCKET_BYTES))
    return MultiCard(cards=cards, link=link, link_gbps=gbps, gradient_gib=grad_bytes / GIB,
                     allreduce_s=seconds, exposed_s=exposed, bucket_gib=grad_bytes / GIB,
                     nccl_gib=NCCL_GIB)


def entered_note(cards: int) -> str:
    """What the plan says of a run on several cards whose figures were entered."""
    return (f"{cards} cards per run: the entered step time and peak are taken as a run on "
            f"{cards} cards (all-reduce and DDP memory included); with --measurements the "
            "one-card figures get an analytic all-reduce term and DDP's buckets")

"""What a cloud launcher (SkyPilot, dstack) needs to run a plan on one rented machine: the
card by the launcher's name and its count, the disk, the window, the environment's setup
and the command that runs the plan, all taken from plan.toml and the order beside it.

Every value that reaches a shell line (package names, the planner's own install spec) is
quoted as one word: a value from a file never runs as code.
"""

from __future__ import annotations

import math
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from planner.errors import InputError, from_validation
from planner.planfile.order import Order
from planner.planfile.plan import Plan, Run
from planner.spec.catalog import Card
from planner.tomlio import read_toml

MOUNT = "/campaign"
"""Where the campaign's storage is mounted on the machine: the working directory of `run`
(journal, checkpoints, exports), so a machine that replaces a lost one resumes."""
BASE_DISK_GB = 100
"""Disk for the system image, the environment and the data, besides checkpoints/exports."""
BUCKET = re.compile(r"^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$")
DSTACK_NAME = re.compile(r"^[a-z][a-z0-9-]{1,40}$")
"""dstack's rule for the name of a run or a volume (its server refuses any other)."""
_VECTOR_BYTES = {"float32": 4, "float16": 2, "int8": 1, "binary": 1 / 8}


@dataclass(frozen=True)
class Launch:
    """One machine that runs the whole plan, in terms any launcher can be given."""

    campaign_id: str
    card: Card
    card_key: str
    cards: int
    window_hours: float
    disk_gb: int
    disk_note: str
    setup: tuple[str, ...]
    env: dict[str, str]
    price_per_hour: float | None
    currency: str

    def window_start(self, *, workdir: str = MOUNT) -> list[str]:
        """Bash lines that note the window's end on the campaign's storage, unless a
        machine before this one did: placed before the setup, since the rented window
        (and the plan's first hour, its stack check) starts when the machine does."""
        seconds = math.ceil(self.window_hours * 3600)
        end = shlex.quote(f"{workdir}/.window-end")
        return [f"mkdir -p {shlex.quote(workdir)}",
                f"[ -s {end} ] || echo $(( $(date +%s) + {seconds} )) > {end}"]

    def run_script(self, *, workdir: str = MOUNT) -> str:
        """The bash that runs the plan in the window: `run` with the plan's cards, stopped
        like a Ctrl-C (its runs get their grace to checkpoint) when the window ends. The
        window's end is kept on the campaign's storage, so a replacement machine keeps the
        first one's deadline instead of starting a new window."""
        cards = ",".join(str(c) for c in range(self.cards))
        end = shlex.quote(f"{workdir}/.window-end")
        return "\n".join([
            "set -euo pipefail",
            *self.window_start(workdir=workdir),
            f"left=$(( $(cat {end}) - $(date +%s) ))",
            'if [ "$left" -le 0 ]; then echo "the window has ended"; exit 0; fi',
            f"timeout --signal=INT --kill-after=120 \"$left\" campaign-planner run plan.toml "
            f"--workdir {shlex.quote(workdir)} --cards {cards} || test $? -eq 124",
        ]) + "\n"


def resource_name(text: str, most: int) -> str:
    """`text` as a name the launchers take: lower-case letters, digits and `-`, starting
    with a letter, at most `most` long; a long one keeps its last six characters (a plan
    id's hash), so two plans' names stay apart."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")
    if not name[:1].isalpha():
        name = f"c-{name}"
    if len(name) > most:
        name = f"{name[:most - 7].rstrip('-')}-{name[-6:]}"
    return name


def read_order(plan: Plan, plan_path: Path) -> Order:
    """The order written beside the plan, checked to be this plan's."""
    path = plan_path.parent / "order.toml"
    data = read_toml(path)
    try:
        order = Order.model_validate(data.get("order"), strict=True)
    except ValidationError as exc:
        raise from_validation(exc, path) from None
    if order.plan_id != plan.campaign.id:
        raise InputError(f"is for plan {order.plan_id}, not {plan.campaign.id}: write the "
                         "plan and its order again together", file=path, field="order.plan_id")
    return order


def setup_lines(order: Order, card_key: str, install: str, *, shipped_card: bool) -> list[str]:
    """Shell lines installing the order's environment and the planner, then checking the
    stack against the card where the planner ships it."""
    env = order.environment
    if not re.fullmatch(r"\d+(\.\d+){0,2}", env.pytorch):
        raise InputError("expected a version such as 2.7", file="order.toml",
                         field="order.environment.pytorch")
    pip = "python3 -m pip install --quiet"
    lines = ["set -euo pipefail", f"{pip} --upgrade pip",
             f"{pip} {shlex.quote(f'torch=={env.pytorch}.*')}"]
    for i, package in enumerate(env.packages):
        # Quoted, a word starting with `-` is still an option to pip (another index, a
        # requirements file): a package is named, never an option.
        if not package.strip() or package.lstrip().startswith("-"):
            raise InputError(f"expected a package name, got {package[:60]!r}",
                             file="order.toml", field=f"order.environment.packages[{i}]")
    if env.packages:
        lines.append(f"{pip} " + " ".join(shlex.quote(p) for p in env.packages))
    lines.append(f"{pip} {shlex.quote(install)}")
    if shipped_card:  # exit 3: some checks cannot run on this machine; nothing failed
        lines.append(f"campaign-planner check --card {shlex.quote(card_key)} || test $? -eq 3")
    return lines


def disk(plan: Plan, given: int | None, runs: list[Run] | None = None) -> tuple[int, str]:
    """Disk in GB and how it was sized: `given`, or an upper bound from the plan. A run keeps
    its latest checkpoint and its export; neither holds more than the state that was on its
    cards, so each is at most the run's planned peak memory times its cards. An embedding
    campaign's exports are its vectors. `runs`: only these runs' share (a per-run job)."""
    if given is not None:
        return given, "as given"
    peaks = {f.config: f.planned_peak_gib for f in plan.assumptions.figures}
    gib = sum(2 * peaks.get(r.variant, 0.0) * len(r.card) for r in runs or plan.runs
              if r.kind == "train")
    emb = plan.embedding
    if emb is not None and emb.dimensions and runs is None:
        docs = emb.documents * max(1, emb.versions_fit)
        gib += docs * emb.dimensions * _VECTOR_BYTES[emb.vector_dtype] / 2**30
    total = BASE_DISK_GB + math.ceil(gib * 2**30 / 1e9)
    return total, (f"an upper bound, {BASE_DISK_GB} GB for the system and data and each "
                   "run's latest checkpoint and export at its planned peak memory; --disk-gb "
                   "sets it")


def launch(plan: Plan, plan_path: Path, card: Card, *, install: str, shipped_card: bool,
           disk_gb: int | None = None) -> Launch:
    """The launch that runs `plan` on one machine of `plan.campaign.cards` cards."""
    c = plan.campaign
    for i, r in enumerate(plan.runs):
        for field, path in (("checkpoint_dir", r.checkpoint_dir), ("export_name", r.export_name)):
            if path.startswith("/"):  # on the machine's own disk, lost with it
                raise InputError(f"is absolute ({path[:80]}): on a cloud machine only "
                                 f"{MOUNT} (the bucket or volume) outlives it; plan with a "
                                 "relative checkpoint_root and export_root",
                                 file=plan_path, field=f"runs[{i}].{field}")
    order = read_order(plan, plan_path)
    size, note = disk(plan, disk_gb)
    price = None if c.price_per_card_hour is None else round(c.price_per_card_hour * c.cards,
                                                             4)
    return Launch(campaign_id=c.id, card=card, card_key=c.card, cards=c.cards,
                  window_hours=c.window_hours, disk_gb=size, disk_note=note,
                  setup=tuple(setup_lines(order, c.card, install, shipped_card=shipped_card)),
                  env={"CAMPAIGN_ID": c.id}, price_per_hour=price, currency=c.currency)


def name_for(card: Card, key: str, tool: str, catalog_hint: str) -> str:
    """The card's name in `tool` ("sky" or "dstack"), or an InputError naming the field."""
    name = card.sky_name if tool == "sky" else card.dstack_name
    if not name:
        raise InputError(f"card {key!r} has no {tool}_name: {tool} names no such card that "
                         f"the catalog knows; add {tool}_name to [cards.{key}] {catalog_hint}",
                         field=f"cards.{key}.{tool}_name")
    return name

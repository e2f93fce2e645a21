"""`campaign-planner embed PLAN`: run an embedding plan on the machine at hand."""

from __future__ import annotations

import argparse
import re
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from planner.errors import InputError

DEVICE = re.compile(r"cpu|mps|cuda(:[0-9]{1,3})?")
MAX_SHARDS = 1_000_000

if TYPE_CHECKING:
    from planner.embed.worker import Job


def parser() -> argparse.ArgumentParser:
    """Arguments of `embed`."""
    from planner.cli.args import Parser

    p = Parser(
        prog="campaign-planner embed",
        description="Embed the corpus as the plan fixes it (model, tokenizer, truncation, "
                    "pooling, normalization), shard by shard, on the device found here. "
                    "Each shard is written atomically with a manifest entry; a restart "
                    "skips finished shards. Run one per card with --part K/N, or several "
                    "without: they share the shards.",
        epilog="The built-in BERT encoder needs torch, tokenizers, safetensors and numpy "
               "(pip install 'campaign-planner[embed]'); other models load with their own "
               "sentence-transformers stack (pip install 'campaign-planner[embed-st]'). "
               "Nothing is downloaded: the model's files must be on this machine.")
    p.add_argument("plan", help="plan.toml of an embedding campaign planned with --corpus")
    p.add_argument("--version", type=int, action="append", metavar="V",
                   help="representation version (repeatable; default: every version)")
    p.add_argument("--part", metavar="K/N",
                   help="embed part K of N: shards K, K+N, K+2N, … (what each planned run "
                        "does, one per card)")
    p.add_argument("--shard", metavar="LIST", help="only these shards: 3, 0-9, or 1,4,7")
    p.add_argument("--corpus", metavar="PATH",
                   help="the corpus, when it is not where the plan says")
    p.add_argument("--device", metavar="DEV",
                   help="cuda, cuda:1, mps or cpu (default: the best one found)")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="precision of the forward pass (default fp32); recorded, and never "
                        "mixed within a version's exports")
    p.add_argument("--check", action="store_true",
                   help="check the exports instead: every shard there, intact, with the "
                        "planned ids")
    p.add_argument("--merge", action="store_true",
                   help="write each finished version as one file in the corpus's order "
                        "(merged.<format> next to its shards), recorded in the manifest")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def parse_part(text: str | None) -> tuple[int, int] | None:
    """`K/N` to (K, N)."""
    if text is None:
        return None
    try:
        k, n = (int(x) for x in text.split("/"))
    except ValueError:
        raise InputError(f"expected K/N such as 0/4, got {text!r}", field="--part") from None
    if not 0 <= k < n:
        raise InputError(f"K must be in 0..{n - 1}, got {k}", field="--part")
    return k, n


def parse_shards(text: str | None) -> list[int] | None:
    """`3`, `0-9` or `1,4,7` to a sorted list."""
    if text is None:
        return None
    out: set[int] = set()
    total = 0
    for item in text.split(","):
        a, dash, b = item.strip().partition("-")
        if not (_number(a) and (_number(b) if dash else not b)):
            raise InputError(f"expected shard numbers such as 3, 0-9 or 1,4,7; got {text!r}",
                             field="--shard")
        first, last = int(a), int(b or a)
        if last < first:
            raise InputError(f"range {item.strip()!r} runs backwards: write {last}-{first}",
                             field="--shard")
        # A range is checked against the plan's shards later; bounding it here keeps a
        # typo such as 0-99999999999 from building a huge list first.
        total += last - first + 1
        if total > MAX_SHARDS:
            raise InputError(f"{text!r} names more shards than any plan has",
                             field="--shard")
        out.update(range(first, last + 1))
    return sorted(out)


def _number(text: str) -> bool:
    return text.isascii() and text.isdigit()


def check_device(name: str | None) -> str | None:
    """Refuse a device name torch would not understand, before anything is loaded."""
    if name is None or DEVICE.fullmatch(name):
        return name
    raise InputError(f"unknown device {name!r}: use cpu, cuda, cuda:N or mps",
                     field="--device")


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner embed`."""
    args = parser().parse_args(list(argv))
    device = check_device(args.device)
    from planner.embed.worker import resolve

    job = resolve(args.plan, versions=args.version, part=parse_part(args.part),
                  shards=parse_shards(args.shard), corpus=args.corpus)
    if args.check:
        return _check(job)
    if args.merge:
        return _merge(job)
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise InputError(f"{exc.name} is not installed: pip install "
                         "'campaign-planner[embed]'", field="embed") from None
    from planner.embed.encoder import load_encoder
    from planner.embed.shared import pick_device
    from planner.embed.worker import Outcome, run

    e = job.embedding
    pick_device(device)  # an unusable device is refused before the model loads
    encoder = load_encoder(e, device=device, dtype=args.dtype)
    prompt = f", prompt {e.prompt!r}" if e.prompt else ""
    print(f"embed {job.plan.campaign.id}: {len(job.shards)} shards × "
          f"{len(job.versions)} version(s) on {encoder.device} ({encoder.dtype}) with "
          f"{encoder.backend}; model {e.model} ({encoder.stack}), truncation "
          f"{e.truncation_tokens}, {e.pooling} pooling, {e.normalization} normalization"
          f"{prompt}", file=sys.stderr)
    previous = signal.signal(signal.SIGTERM, _terminate)
    outcome = Outcome()
    try:
        outcome = run(job, encoder, progress=not args.quiet)
    except KeyboardInterrupt:
        print("\ncampaign-planner: interrupted: finished shards are recorded, the shard in "
              "progress was discarded; run the same command again to continue",
              file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    rate = outcome.useful_tokens / outcome.seconds if outcome.seconds else 0.0
    print(f"{len(outcome.done)} shards embedded ({outcome.documents:,} documents, "
          f"{outcome.useful_tokens:,} useful tokens, {rate:,.0f} useful tokens/s); "
          f"{len(outcome.skipped)} already finished; {len(outcome.busy)} held by another "
          "worker")
    return 0


def _check(job: Job) -> int:
    from planner.embed.check import check

    results = check(job)
    for vc in results:
        state = "complete" if vc.complete else "INCOMPLETE"
        print(f"v{vc.version} {state}: {vc.finished} of {vc.shards} shards, "
              f"{vc.documents:,} documents, {vc.useful_tokens:,} useful tokens in {vc.folder}")
        if vc.missing:
            shown = ", ".join(map(str, vc.missing[:20]))
            print(f"  not yet embedded: {shown}{' …' if len(vc.missing) > 20 else ''}")
        for problem in vc.problems + vc.merged:
            print(f"  {problem}")
    return 0 if all(vc.complete for vc in results) else 1


def _merge(job: Job) -> int:
    from planner.embed.merge import merge

    for m in merge(job):
        print(f"v{m.version}: {m.documents:,} documents in corpus order in {m.path}")
    return 0

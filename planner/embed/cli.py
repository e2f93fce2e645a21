"""`campaign-planner embed PLAN`: run an embedding plan on the machine at hand."""

from __future__ import annotations

import argparse
import signal
import sys
from collections.abc import Sequence
from types import FrameType
from typing import TYPE_CHECKING

from planner.errors import InputError

if TYPE_CHECKING:
    from planner.embed.worker import Job


def parser() -> argparse.ArgumentParser:
    """Arguments of `embed`."""
    from planner.cli import _Parser

    p = _Parser(
        prog="campaign-planner embed",
        description="Embed the corpus as the plan fixes it (model, tokenizer, truncation, "
                    "pooling, normalization), shard by shard, on the device found here. "
                    "Each shard is written atomically with a manifest entry; a restart "
                    "skips finished shards. Run one per card with --part K/N, or several "
                    "without: they share the shards.",
        epilog="Needs torch, tokenizers, safetensors and numpy "
               "(pip install 'campaign-planner[embed]'). Nothing is downloaded: the model's "
               "files must be on this machine.")
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
    try:
        for item in text.split(","):
            a, _, b = item.partition("-")
            out.update(range(int(a), int(b or a) + 1))
    except ValueError:
        raise InputError(f"expected shard numbers such as 3, 0-9 or 1,4,7; got {text!r}",
                         field="--shard") from None
    return sorted(out)


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner embed`."""
    args = parser().parse_args(list(argv))
    from planner.embed.worker import resolve

    job = resolve(args.plan, versions=args.version, part=parse_part(args.part),
                  shards=parse_shards(args.shard), corpus=args.corpus)
    if args.check:
        return _check(job)
    try:
        import numpy  # noqa: F401
        import tokenizers  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        raise InputError(f"{exc.name} is not installed: pip install "
                         "'campaign-planner[embed]'", field="embed") from None
    from planner.embed.encoder import Encoder
    from planner.embed.worker import Outcome, run

    e = job.embedding
    encoder = Encoder(e.model, e.tokenizer, e.truncation_tokens, e.pooling, e.normalization,
                      device=args.device, dtype=args.dtype)
    print(f"embed {job.plan.campaign.id}: {len(job.shards)} shards × "
          f"{len(job.versions)} version(s) on {encoder.device} ({encoder.dtype}); "
          f"model {e.model}, truncation {e.truncation_tokens}, {e.pooling} pooling, "
          f"{e.normalization} normalization", file=sys.stderr)
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
        for problem in vc.problems:
            print(f"  {problem}")
    return 0 if all(vc.complete for vc in results) else 1

"""`campaign-planner corpus size`: the largest token budget for the card, measured on the
longest texts, and the throughput there, written as measurements the planner reads."""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Sequence

import humanize

from planner.errors import InputError
from planner.tomlio import refuse_existing


def parser() -> argparse.ArgumentParser:
    """Arguments of `corpus size`."""
    from planner.cli.args import Parser

    p = Parser(prog="campaign-planner corpus size",
               description="Size an embedding campaign on the longest texts of the corpus: "
                            "the largest token budget whose widest batch fits the preset's "
                            "card with its memory margin (real forward passes under a memory "
                            "cap on CUDA, the fake-tensor estimate elsewhere), and the "
                            "throughput of the campaign's model on those texts.",
               epilog="Plan with the result: campaign-planner --preset P --corpus C "
                       "--measurements FILE. Needs the embed extra and the model's files.")
    p.add_argument("corpus", help="the corpus file (.jsonl, .csv, .tsv, .parquet)")
    p.add_argument("--preset", default="embedding-7d", metavar="NAME|PATH",
                   help="embedding preset (default: embedding-7d)")
    p.add_argument("--id-field", default="id", metavar="NAME", help="id field (default: id)")
    p.add_argument("--text-field", default="text", metavar="NAME",
                   help="text field (default: text)")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog, merged in")
    p.add_argument("--device", metavar="DEV", help="cuda or cpu (default: the best found)")
    p.add_argument("--dtype", default="fp32", choices=["fp32", "bf16", "fp16"],
                   help="precision of the forward pass (default fp32)")
    p.add_argument("--steps", type=int, default=3, metavar="N",
                   help="batches timed after one warm-up (default 3)")
    p.add_argument("--out", metavar="FILE", help="write the measurements TOML here")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.add_argument("--quiet", action="store_true", help="no progress bar while scanning")
    return p


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner corpus size`."""
    args = parser().parse_args(list(argv))
    if args.steps < 1:
        raise InputError("must be at least 1", field="--steps")
    if args.out:
        refuse_existing([args.out], force=args.force)
    from planner.corpus.scan import scan
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    preset, source = load_preset(args.preset)
    e = preset.embedding
    if e is None:
        raise InputError("not an embedding preset", file=source, field="campaign.kind")
    from planner.corpus.plan_check import judge_preset

    for warning in judge_preset(preset, source):
        print(f"warning: {warning}", file=sys.stderr)
    catalog = load_catalog(args.catalog)
    from planner.corpus.budget import with_budget

    preset, _ = with_budget(preset, catalog.get(preset.campaign.card))
    e = preset.embedding
    assert e is not None and e.token_budget is not None
    result = scan(args.corpus, args.id_field, args.text_field, tokenizer=e.tokenizer,
                  truncation=e.truncation_tokens, batch_size=e.batch_size,
                  token_budget=e.token_budget, progress=not args.quiet, prompt=e.prompt)
    try:
        from planner.embed.encoder import load_encoder
        from planner.embed.sizing import size
    except ImportError as exc:
        raise InputError(f"{exc.name} is not installed: pip install "
                         "'campaign-planner[embed]'", field="corpus size") from None
    from planner.figures.measurements import measurements_toml
    from planner.tomlio import write_atomic

    # The backend the plan will name (`auto`: the built-in BERT where it loads the folder,
    # sentence-transformers otherwise), so the sizing runs what the worker will run.
    enc = load_encoder(e, device=args.device, dtype=args.dtype)
    print(f"sizing on {enc.device} ({enc.backend}): forward passes of {e.model} on the "
          f"{len(result.longest)} longest texts …", file=sys.stderr)
    command = "campaign-planner corpus size " + shlex.join(argv)
    s = size(preset, catalog, result, enc, steps=args.steps, command=command)
    m = s.measurements
    cm = m.configs[0]
    assert cm.batch is not None and cm.step_time is not None
    method = ("real forward passes under a memory cap" if cm.batch.method == "cuda"
              else "fake-tensor estimate")
    lines = [
        f"Worst case  the {len(result.longest)} longest texts (longest "
        f"{result.longest[0].tokens:,} tokens), truncated to {e.truncation_tokens}: batches "
        f"{s.width} tokens wide",
        f"Fits        {s.rows_fit:,} rows × {s.width} = {s.budget_tokens:,} padded tokens per "
        f"batch on {cm.batch.card} ({cm.batch.budget_gib:g} GiB usable: what a process can "
        f"allocate less the CUDA context and the {preset.overheads.memory_margin_gib:g} GiB "
        f"margin; {method}, "
        f"{cm.batch.probes} probes, {cm.batch.oom_recoveries} out-of-memory recoveries)",
        f"Timed       {cm.micro_batch:,} × {s.width} = {s.run_budget:,} padded tokens per batch "
        f"on {m.device.name}: median {cm.step_time.median_s:.3g} s per batch "
        f"({cm.step_time.steps} timed) → {s.padded_per_s:,.0f} padded, "
        f"{s.useful_per_s:,.0f} useful tokens/s",
        f"Peak        {humanize.naturalsize(s.peak_gib * 2**30, binary=True)} at that batch "
        f"({cm.memory.method if cm.memory else 'not measured'})",
    ]
    if s.run_budget < e.token_budget:
        lines.append(f"Too big     the preset's token_budget = {e.token_budget:,} does not fit: "
                     f"set token_budget = {s.budget_tokens:,} or less")
    elif s.budget_tokens > e.token_budget:
        lines.append(f"Headroom    token_budget could rise to {s.budget_tokens:,} "
                     f"(now {e.token_budget:,})")
    if m.device.kind == "cpu":
        lines.append("Note        a CPU timing does not transfer to a GPU: the planner takes "
                     "the memory and keeps the throughput it had (--use-cpu-step-times to "
                     "plan with this one); size on the rented card for a measured one")
    if args.out:
        write_atomic(args.out, measurements_toml(m), force=True)
        lines.append(f"\nWrote {args.out}: plan with campaign-planner --preset {args.preset} "
                     f"--corpus {args.corpus} --measurements {args.out}")
    print("\n".join(lines))
    return 0

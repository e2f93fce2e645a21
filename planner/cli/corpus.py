"""`campaign-planner corpus scan`: measure a corpus before planning an embedding campaign."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

import humanize
import tomli_w

from planner.corpus.outputs import CorpusScan
from planner.errors import InputError

HEADER = ("# campaign-planner corpus scan: documents, token lengths, and what each batching "
          "strategy computes.\n\n")


def parser() -> argparse.ArgumentParser:
    """Arguments of `corpus scan`."""
    from planner.cli.args import Parser

    p = Parser(prog="campaign-planner corpus scan",
               description="Scan a corpus (JSON Lines, CSV, TSV, or Parquet with pyarrow) "
                            "with the campaign's tokenizer: documents, empty texts, token "
                            "lengths, the longest documents, and the padding of both batching "
                            "strategies. Missing or duplicate ids stop the scan.")
    p.add_argument("corpus", help="the corpus file (.jsonl, .csv, .tsv, .parquet)")
    p.add_argument("--id-field", default="id", metavar="NAME",
                   help="field holding each document's stable id (default: id)")
    p.add_argument("--text-field", default="text", metavar="NAME",
                   help="field holding the text (default: text)")
    p.add_argument("--preset", default="embedding-7d", metavar="NAME|PATH",
                   help="embedding preset giving the tokenizer, prompt, truncation, batch "
                        "size and token budget (default: embedding-7d)")
    p.add_argument("--tokenizer", metavar="NAME|DIR",
                   help="count with this tokenizer instead of the preset's (a model folder "
                        "or tokenizer.json, a packaged model, or a name in the local "
                        "Hugging Face cache)")
    p.add_argument("--out", metavar="FILE", help="write the scan as TOML")
    p.add_argument("--force", action="store_true", help="overwrite --out")
    p.add_argument("--json", action="store_true", help="print the scan as JSON")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    return p


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner corpus ...`."""
    argv = list(argv)
    if not argv or argv[0] in ("-h", "--help"):
        print("usage: campaign-planner corpus {scan,size} CORPUS [options]\n\n"
              "Commands:\n  scan   count documents and token lengths, compare batching\n"
              "  size   largest token budget for the card, and throughput, on the longest "
              "texts\n\nSee `campaign-planner corpus scan -h` and `corpus size -h`.")
        return 0 if argv else 2
    if argv[0] == "size":
        from planner.cli.corpus_size import main as size_main

        return size_main(argv[1:])
    if argv[0] != "scan":
        raise InputError(f"unknown command {argv[0]!r}; known: scan, size", field="corpus")
    args = parser().parse_args(argv[1:])
    from planner.corpus.plan_check import judge_preset
    from planner.corpus.scan import scan
    from planner.spec.loading import load_preset
    from planner.tomlio import refuse_existing, write_atomic

    preset, source = load_preset(args.preset)
    e = preset.embedding
    if e is None:
        raise InputError("not an embedding preset", file=source, field="campaign.kind")
    if args.out:
        refuse_existing([args.out], force=args.force)
    for warning in judge_preset(preset, source):
        print(f"warning: {warning}", file=sys.stderr)
    result = scan(args.corpus, args.id_field, args.text_field,
                  tokenizer=args.tokenizer or e.tokenizer, truncation=e.truncation_tokens,
                  batch_size=e.batch_size, token_budget=e.grouped_budget,
                  progress=not args.quiet, prompt=e.prompt)
    if args.out:
        write_atomic(args.out, scan_toml(result), force=True)
    if args.json:
        print(json.dumps(result.model_dump(mode="json"), indent=2))
    else:
        print(render_scan(result))
        if args.out:
            print(f"\nWrote {args.out}")
    return 0


def scan_toml(s: CorpusScan) -> str:
    """The scan as TOML text."""
    return HEADER + tomli_w.dumps(s.model_dump(mode="json"))


def _lines(s: CorpusScan) -> str:
    if not s.empty:
        return ""
    more = ", …" if s.empty > len(s.empty_lines) else ""
    return f" (still embedded; lines {', '.join(map(str, s.empty_lines))}{more})"


def render_scan(s: CorpusScan) -> str:
    """A scan in words."""
    rate = s.documents / s.seconds if s.seconds > 0 else 0.0
    lz = s.lengths
    lines = [
        f"{s.corpus} · {s.format} · {humanize.naturalsize(s.bytes)} · "
        f"{s.documents:,} documents · scanned in {s.seconds:.1f} s ({rate:,.0f} docs/s)",
        f"Tokens    {s.tokens:,} before truncation; {s.truncated:,} documents longer than "
        f"{s.truncation_tokens} are truncated",
        f"Counted   {s.tokenizer}" + (f", with the prompt {s.prompt!r} before every text"
                                        if s.prompt else ""),
        f"Lengths   min {lz.min:,} · p50 {lz.p50:,} · p90 {lz.p90:,} · p99 {lz.p99:,} · "
        f"max {lz.max:,} ({lz.source})",
        f"Empty     {s.empty:,} documents{_lines(s)}",
        "",
        "Lengths (tokens before truncation)",
    ]
    top = max(b.documents for b in s.histogram) or 1
    for b in s.histogram:
        bar = "█" * max(1 if b.documents else 0, round(30 * b.documents / top))
        lines.append(f"  ≤{b.upto:<7,} {b.documents:>12,}  {bar}")
    lines += ["", "Longest"]
    lines += [f"  {d.tokens:>9,} tokens  {d.id} (line {d.line})" for d in s.longest]
    lines += ["", f"Batching (truncation {s.truncation_tokens}; original: {s.batch_size} per "
                  f"batch; grouped: {s.token_budget:,} padded tokens per batch)",
              "  strategy         batches    useful tokens    padded tokens   padding"]
    for st in s.strategies:
        lines.append(f"  {st.strategy:<15} {st.batches:>8,}  {st.useful_tokens:>15,}  "
                     f"{st.padded_tokens:>15,}  {st.padding_fraction:>7.1%}")
    return "\n".join(lines)

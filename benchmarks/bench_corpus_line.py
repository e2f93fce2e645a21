"""Scanning a corpus whose one record is a huge JSON Lines line: prints figures beside the
load average, asserts nothing.

    python benchmarks/bench_corpus_line.py [--mb 209] [--repeat 3] [--tokenizer NAME|DIR]

Writes, in a temporary folder, a JSON Lines corpus of three records: a short one, one line
of about `--mb` MB (a text with escapes, its id after the text, so the whole line is read
through), and a short one; and a corpus of the two short records alone. Then runs
`campaign-planner corpus scan CORPUS --quiet --json` on each in a fresh process, the two
taken in turn so that both see the same load, and prints per corpus the wall time, the
process's CPU time and its peak resident memory (the whole process: interpreter, imports
and the scan). The scan reads a line longer than 4 MiB as a stream, keeping only the text
it tokenizes, so the huge line should cost seconds and a few MiB more than the short
corpus, not memory in proportion to the line.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

CHUNK = b"lorem ipsum \\u00e9 dolor \\\"sit\\\" amet, " * 25_000
"""A piece of the huge text, escapes included (each one decoded as JSON would)."""


def load() -> str:
    """The load average, for reading the figures beside."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} cores"


def write_corpora(folder: Path, megabytes: float) -> tuple[Path, Path]:
    """(The corpus with the huge line, the corpus of the short records alone)."""
    short = [b'{"id": "first", "text": "a short document before the long one"}\n',
             b'{"id": "last", "text": "a short document after it"}\n']
    small = folder / "short.jsonl"
    small.write_bytes(b"".join(short))
    huge = folder / "huge.jsonl"
    with huge.open("wb") as fh:
        fh.write(short[0])
        fh.write(b'{"text": "')
        for _ in range(max(1, round(megabytes * 1e6 / len(CHUNK)))):
            fh.write(CHUNK)
        fh.write(b'", "meta": {"tags": ["x", "y"], "n": 3}, "id": "huge"}\n')
        fh.write(short[1])
    return huge, small


def measured(corpus: Path, tokenizer: str | None) -> tuple[float, float, float, dict[str, Any]]:
    """(Wall s, CPU s, peak RSS MiB, the scan's JSON) of one `corpus scan` process; CPU
    and memory are the child's own, from its resource usage."""
    cmd = [sys.executable, "-m", "planner", "corpus", "scan", str(corpus), "--quiet",
           "--json", *(["--tokenizer", tokenizer] if tokenizer else [])]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            sys.exit(f"corpus scan failed ({proc.returncode}): {err.read().decode().strip()}")
        result = json.loads(out.read())
    # ru_maxrss is in KiB on Linux.
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mb", type=float, default=209, help="size of the huge line, in MB")
    ap.add_argument("--repeat", type=int, default=3, help="processes per corpus")
    ap.add_argument("--tokenizer", help="count with this tokenizer (default: the preset's)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        huge, small = write_corpora(Path(tmp), args.mb)
        size, line = huge.stat().st_size, huge.stat().st_size - small.stat().st_size
        runs: dict[str, list[tuple[float, float, float]]] = {"huge": [], "short": []}
        result: dict[str, Any] = {}
        for _ in range(args.repeat):
            for name, corpus in (("huge", huge), ("short", small)):
                wall, cpu, peak, out = measured(corpus, args.tokenizer)
                runs[name].append((wall, cpu, peak))
                if name == "huge":
                    result = out
    print(f"corpus: 3 records, {size / 1e6:.1f} MB, one line of "
          f"{line / 1e6:.1f} MB; scan says {result['documents']} "
          f"documents, {result['truncated']} truncated; tokenizer: {result['tokenizer']}")
    for name, label in (("huge", "with the huge line"), ("short", "short records alone")):
        wall = [w for w, _, _ in runs[name]]
        cpu = [c for _, c, _ in runs[name]]
        peak = [p for _, _, p in runs[name]]
        print(f"corpus scan, {label:<20} wall median {statistics.median(wall):6.2f} s, max "
              f"{max(wall):6.2f} s; CPU median {statistics.median(cpu):6.2f} s; peak RSS "
              f"median {statistics.median(peak):6.1f} MiB, max {max(peak):6.1f} MiB; {load()}")
    extra = statistics.median(p for _, _, p in runs["huge"]) - statistics.median(
        p for _, _, p in runs["short"])
    print(f"the huge line's own memory: {extra:+.1f} MiB of peak RSS over the short corpus "
          f"(read as a stream: not in proportion to the line)")


if __name__ == "__main__":
    main()

"""A tiny robustness evaluation for the executor's tests: reads a trained run's final
checkpoint and writes an export; refuses (exit 4) when training has not finished."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--run-id", required=True)
    p.add_argument("--checkpoint-dir", type=Path, required=True)
    p.add_argument("--checkpoint", type=Path, required=True)
    p.add_argument("--out", type=Path, required=True)
    a = p.parse_args(argv)
    trace = a.checkpoint_dir / "trace.jsonl"
    events = [json.loads(line) for line in trace.read_text().splitlines()] \
        if trace.exists() else []
    if not any(e["ev"] == "end" for e in events):
        print(f"{a.run_id}: training has not finished", file=sys.stderr)
        return 4
    ckpt = json.loads(a.checkpoint.read_text())
    out = Path(f"{a.out}.json")
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_name(out.name + ".runs"), "a", encoding="utf-8") as fh:
        fh.write("ran\n")
    out.write_text(json.dumps({"evaluated": ckpt["state"]}))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

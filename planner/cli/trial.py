"""`campaign-planner trial`: time each configuration's own command into measurements.toml.

Exit codes: 0 every configuration measured; 1 some crashed, ran out of memory or reported no
progress (each marked in the file, which is written); 2 bad input (nothing started, nothing
written); 3 cards asked for and none can be read here (no NVML); 130 stopped (nothing
written).
"""

from __future__ import annotations

import argparse
import math
import os
import re
import shlex
import shutil
import signal
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from planner.cli.args import Parser
from planner.errors import InputError

if TYPE_CHECKING:
    from planner.run.trial import Budget

MOST = 1e7
"""Largest step count or number of seconds or minutes a trial is given (months)."""
CARDS = re.compile(r"\s*(\d{1,4})\s*(?:-\s*(\d{1,4})\s*)?")


def parser() -> Parser:
    """Arguments of `campaign-planner trial`."""
    p = Parser(
        prog="campaign-planner trial",
        description="Run each configuration's own command (baseline and every variant, the "
                    "first seed) as `run` starts it, in a scratch folder, for a few steps or "
                    "minutes; read its step times (and peak memory) from the progress it "
                    "reports (CAMPAIGN_PROGRESS), and write measurements.toml. Plan with it: "
                    "campaign-planner --preset X --measurements FILE.",
        epilog="Exit codes: 0 every configuration measured; 1 some crashed, ran out of memory "
               "or reported no progress (marked in the file, which is written); 2 bad input "
               "(nothing started or written); 3 cards asked for and none can be read here "
               "(install campaign-planner[trial] for NVML); 130 stopped (nothing written).")
    p.add_argument("--preset", metavar="NAME|PATH", required=True,
                   help="shipped preset name or preset file (a training campaign)")
    p.add_argument("--out", metavar="FILE", required=True, help="measurements file to write")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    budget = p.add_mutually_exclusive_group(required=True)
    budget.add_argument("--steps", metavar="N", help="timed steps per configuration")
    budget.add_argument("--minutes", metavar="M", help="or minutes of timed steps each")
    p.add_argument("--warmup", metavar="K", default="2",
                   help="steps not timed after the command's start-up and its own warm-up "
                        "(reports with \"warmup\": true are never timed); default 2")
    p.add_argument("--timeout", metavar="SECONDS", default="600",
                   help="a configuration that reports no new step for this long (its "
                        "start-up included) is stopped and marked no-progress; default 600")
    p.add_argument("--grace", metavar="SECONDS", default="10",
                   help="between SIGTERM and SIGKILL when a command is stopped; default 10")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto",
                   help="cuda: the cards NVML sees; cpu: no card (labelled CPU); default: "
                        "cuda when NVML sees a card")
    p.add_argument("--cards", metavar="LIST",
                   help="card indices, e.g. 0,1 or 0-3 (default: every card NVML sees); "
                        "with more than one run's worth, configurations run side by side, "
                        "one per group of cards_per_run cards")
    p.add_argument("--workdir", metavar="DIR",
                   help="folder the commands start in, as `run --workdir` (default: here)")
    p.add_argument("--scratch", metavar="DIR",
                   help="where the trial's own trial-… folder is made: checkpoints, exports, "
                        "logs (default: --workdir); removed after a trial where every "
                        "configuration was measured, unless --keep")
    p.add_argument("--keep", action="store_true", help="keep the trial's folder")
    p.add_argument("--dtype", choices=("fp32", "tf32", "bf16", "fp16", "fp8"),
                   help="the precision the command trains in, for moving its figures to "
                        "other cards (default: the preset's [measure] dtype, else bf16)")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog, merged in")
    return p


def _number(text: str, flag: str, *, whole: bool = False, least: float = 0.0,
            above: bool = False, most: float = MOST) -> float:
    try:
        value = int(text) if whole else float(text)
    except ValueError:
        raise InputError(f"not {'a whole number' if whole else 'a number'}: {text[:40]!r}",
                         field=flag) from None
    if not math.isfinite(value) or value < least or (above and value <= least):
        raise InputError(f"must be {'more than' if above else 'at least'} {least:g}, got "
                         f"{text[:40]}", field=flag)
    if value > most:
        raise InputError(f"must be at most {most:g}, got {text[:40]}", field=flag)
    return value


def budget_of(args: argparse.Namespace) -> Budget:
    """The trial's budget from the arguments; InputError naming the flag at fault."""
    from planner.run.trial import Budget

    steps = minutes = None
    if args.steps is not None:
        steps = int(_number(args.steps, "--steps", whole=True, least=1))
    if args.minutes is not None:
        minutes = _number(args.minutes, "--minutes", above=True)
    return Budget(steps=steps, minutes=minutes,
                  skip=int(_number(args.warmup, "--warmup", whole=True)),
                  timeout_s=_number(args.timeout, "--timeout", above=True),
                  grace_s=_number(args.grace, "--grace"))


def parse_cards(text: str) -> list[int]:
    """`0,1,2,3` or `0-3` into card indices."""
    cards: list[int] = []
    for part in text.split(","):
        m = CARDS.fullmatch(part)
        if not m or (m[2] is not None and int(m[2]) < int(m[1])):
            raise InputError(f"expected card indices like 0,1,2,3 or 0-3, got {text[:60]!r}",
                             field="--cards")
        cards += range(int(m[1]), int(m[2] or m[1]) + 1)
    if len(set(cards)) != len(cards):
        raise InputError(f"a card is listed twice in {text[:60]!r}", field="--cards")
    return cards


def card_groups(cards: list[int], per_run: int) -> list[list[int]]:
    """Groups of `per_run` cards, one configuration on each at a time."""
    if len(cards) < per_run:
        raise InputError(f"a run takes {per_run} cards; {len(cards)} given", field="--cards")
    return [cards[i:i + per_run] for i in range(0, len(cards) - per_run + 1, per_run)]


def _writable(folder: Path, out: Path, flag: str) -> None:
    """Refuse `out` now when its folder takes no file: found after the trial, it would
    waste it. Tried with a file made and removed at once."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".trial-probe-", dir=folder)
    except OSError as exc:
        raise InputError(f"cannot be written in {folder}: {exc.strerror or exc}", file=out,
                         field=flag) from None
    os.close(fd)
    os.unlink(probe)


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt  # the trial stops its commands on the way out


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner trial`."""
    args = parser().parse_args(argv)
    from planner.campaign import campaign_id
    from planner.campaign.trial import trial_runs
    from planner.figures.measured import spec_of
    from planner.figures.measurements import measurements_toml
    from planner.run.trial import Trial
    from planner.run.trial_device import describe, open_nvml
    from planner.run.trial_file import trial_measurements
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset
    from planner.tomlio import refuse_existing, write_atomic

    budget = budget_of(args)
    out = Path(args.out)
    refuse_existing([out], force=args.force)
    if out.is_dir():
        raise InputError("is a folder; give a file name", file=out, field="--out")
    _writable(next(p for p in out.absolute().parents if p.exists()), out, "--out")
    workdir = Path(args.workdir or ".").expanduser().absolute()
    if not workdir.is_dir():
        raise InputError("is not a folder", file=workdir, field="--workdir")
    parent = Path(args.scratch).expanduser().absolute() if args.scratch else workdir
    if not parent.is_dir():
        raise InputError("is not a folder", file=parent, field="--scratch")
    cards = parse_cards(args.cards) if args.cards is not None else None
    if cards is not None and args.device == "cpu":
        raise InputError("cards are for a trial on cards: drop --device cpu or --cards",
                         field="--cards")
    preset, source = load_preset(args.preset)
    catalog = load_catalog(args.catalog)
    if preset.training is None:
        raise InputError("a trial runs training configurations; an embedding campaign's "
                         "batches are measured by `campaign-planner measure`",
                         file=source, field="campaign.kind")
    nvml = None if args.device == "cpu" else open_nvml()
    if nvml is None and (args.device == "cuda" or cards is not None):
        print("campaign-planner: cannot read the cards here: NVML sees none (a GPU trial "
              "needs its driver and pip install 'campaign-planner[trial]'); without "
              "--cards and --device cuda the trial runs on the CPU", file=sys.stderr)
        return 3
    per_run = preset.training.cards_per_run
    groups = [[]] if nvml is None else card_groups(
        cards if cards is not None else list(range(nvml.count())), per_run)
    idle = [c for c in (cards or []) if not any(c in g for g in groups)]
    spec = spec_of(preset)
    dtype = args.dtype or (spec.dtype if spec is not None else "bf16")
    try:
        scratch = Path(tempfile.mkdtemp(prefix=f"trial-{preset.campaign.name}-", dir=parent))
    except OSError as exc:
        raise InputError(f"cannot make the trial's folder here: {exc.strerror or exc}",
                         file=parent, field="--scratch") from None
    try:
        runs = trial_runs(preset, catalog, checkpoint_root=str(scratch / "checkpoints"),
                          export_root=str(scratch / "exports"), source=source)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    device = describe(nvml, groups[0], catalog)
    how = ("one after another" if len(groups) == 1 else
           f"side by side on {len(groups)} groups of {per_run} card{'s' * (per_run > 1)}")
    print(f"Trial of {len(runs)} configuration{'s' * (len(runs) > 1)} of {preset.campaign.name} "
          f"on {device.name}, {how}; "
          + (f"{budget.steps} timed steps" if budget.steps else f"{budget.minutes:g} min")
          + f" each after {budget.skip} warm-up; folder {scratch}", flush=True)
    if idle:
        print(f"card{'s' * (len(idle) > 1)} {','.join(map(str, idle))} left idle: fewer "
              f"than a run's {per_run}", flush=True)
    # A closed terminal (SIGHUP) stops the trial as Ctrl-C does: its commands, each in a
    # session of its own, would otherwise outlive it on the cards.
    previous = {s: signal.signal(s, _interrupt) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        results = Trial(runs, groups, workdir=workdir, scratch=scratch,
                        campaign_id=campaign_id(preset),
                        budget=budget, nvml=nvml,
                        say=lambda line: print(line, flush=True)).run()
    except KeyboardInterrupt:
        print(f"campaign-planner: stopped; nothing written (the trial's folder {scratch} "
              "is left)", file=sys.stderr)
        return 130
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)
        if nvml is not None:
            nvml.close()
    measured = [r for r in results if r.outcome == "measured"]
    keep = args.keep or len(measured) < len(results)
    command = "campaign-planner trial " + shlex.join(list(argv))
    m = trial_measurements(preset, results, device, dtype=dtype, budget=budget,
                           command=command, keep_logs=keep)
    write_atomic(out, measurements_toml(m), force=args.force)
    if not keep:
        shutil.rmtree(scratch, ignore_errors=True)
    print(f"\nWrote {out}: {len(measured)} of {len(results)} configurations measured. Plan "
          f"with it:\n  campaign-planner --preset {shlex.quote(args.preset)} --measurements "
          f"{shlex.quote(str(out))}")
    if len(measured) < len(results):
        print(f"The others are marked in the file with the reason; their logs are in "
              f"{scratch / 'logs'}")
    elif keep:
        print(f"The trial's folder is kept: {scratch}")
    if device.kind == "cpu":
        print("Trialled on the CPU: the plan takes its memory figures and keeps the step "
              "times it had (add --use-cpu-step-times to plan with the CPU's).")
    return 0 if len(measured) == len(results) else 1

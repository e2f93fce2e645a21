"""`campaign-planner measure`: measure a preset's configurations into measurements.toml.

Exit codes: 0 measured and written; 1 out of memory that could not be recovered (what was
measured before is written, marked partial); 2 bad input (nothing written); 3 measurement
unavailable here (no torch, or --device cuda without a GPU); 130 stopped with Ctrl-C (what
was measured is written, marked partial).
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from planner.cli.args import Parser
from planner.errors import InputError
from planner.measure import (
    DEVICE,
    MeasureOOM,
    MeasureProgress,
    MeasureUnavailable,
    measure_preset,
)


def parser() -> Parser:
    """Arguments of `campaign-planner measure`."""
    p = Parser(
        prog="campaign-planner measure",
        description="Measure step time, peak memory and FLOPs of every configuration of a "
                    "preset (baseline and each variant), size the micro-batch for the "
                    "preset's card, and write measurements.toml. Plan with it: "
                    "campaign-planner --preset X --measurements FILE.",
        epilog="Exit codes: 0 written; 1 unrecoverable out-of-memory (partial file written); "
               "2 bad input (nothing written); 3 cannot measure here (no torch / no GPU); "
               "130 stopped with Ctrl-C (partial file written).")
    p.add_argument("--preset", metavar="NAME|PATH", required=True,
                   help="shipped preset name or preset file with a [<kind>.measure] section: "
                        "reference = \"transformer\" / \"encoder\" (built-in), \"hf\" with "
                        "config = \"config.json\" (any transformers architecture, random "
                        "weights, nothing downloaded), or factory = \"module:function\"")
    p.add_argument("--out", metavar="FILE", required=True, help="measurements file to write")
    p.add_argument("--force", action="store_true", help="overwrite an existing --out file")
    p.add_argument("--steps", type=_positive, metavar="N",
                   help="timed steps per configuration (default: the preset's, else 10)")
    p.add_argument("--device", type=_device, default="auto", metavar="auto|cpu|cuda[:N]",
                   help="where to run (default: cuda when available, else cpu); cuda:N for "
                        "the N-th GPU")
    p.add_argument("--threads", type=_positive, metavar="N",
                   help="CPU threads for torch (default: all this process may use)")
    p.add_argument("--catalog", metavar="FILE", help="your own card catalog, merged in")
    return p


def _device(text: str) -> str:
    if not DEVICE.match(text) or (not text.startswith("cuda") and ":" in text):
        raise InputError(f"unknown device {text!r}: auto, cpu, cuda or cuda:N")
    return text


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise InputError(f"not an integer: {text!r}") from None
    if value < 1:
        raise InputError(f"must be at least 1, got {value}")
    return value


class Bar:
    """A one-line progress bar on a terminal; a line per configuration otherwise."""

    def __init__(self, stream: TextIO) -> None:
        self.stream, self.tty = stream, stream.isatty()
        self.start = time.monotonic()
        self.last_config = ""
        self.lock = threading.Lock()

    def __call__(self, p: MeasureProgress) -> None:
        with self.lock:
            config = p.label.split(":", 1)[0]
            if not self.tty:
                if config != self.last_config:
                    self.stream.write(f"measuring {config} ({p.done}/{p.total})\n")
                    self.stream.flush()
                elif p.label.split(": ", 1)[-1].startswith("step 1/"):
                    # A log reader (or a script waiting to interrupt) learns that timing
                    # has begun: from here a stop keeps a step time for this configuration.
                    self.stream.write(f"timing {config}: first step done\n")
                    self.stream.flush()
                self.last_config = config
                return
            width = 28
            filled = int(width * p.fraction)
            spent = time.monotonic() - self.start
            eta = spent / p.fraction - spent if p.fraction > 0 else 0.0
            line = (f"\r[{'#' * filled}{'.' * (width - filled)}] {p.done}/{p.total} "
                    f"{p.label[:40]:<40} eta {int(eta) // 60}:{int(eta) % 60:02d}")
            self.stream.write(line)
            self.stream.flush()

    def close(self) -> None:
        """End the bar's line (once)."""
        if self.tty and self.last_config != "\0":
            self.stream.write("\n")
            self.stream.flush()
        self.last_config = "\0"


def _run_in_thread(kwargs: dict[str, Any], cancel: threading.Event) -> Any:
    result: dict[str, Any] = {}
    done = threading.Event()

    def work() -> None:
        try:
            result["value"] = measure_preset(**kwargs, cancel=cancel)
        except BaseException as exc:  # handed to the main thread
            result["error"] = exc
        finally:
            done.set()

    interrupts = 0

    def interrupted(signum: int, frame: Any) -> None:
        # A handler rather than KeyboardInterrupt: Python runs it between any two bytecodes
        # of this thread, and a KeyboardInterrupt raised just outside the `try` of a wait
        # (the signal delivered to another thread, noticed after the wait) ended the
        # process with the measurement still running, never stopped.
        nonlocal interrupts
        interrupts += 1
        if interrupts > 1:
            print("\ncampaign-planner: stopped without saving", file=sys.stderr)
            raise KeyboardInterrupt
        cancel.set()
        print("\nstopping after the current step and keeping what was measured "
              "(Ctrl-C again to quit without saving)", file=sys.stderr)

    worker = threading.Thread(target=work, name="measure", daemon=True)
    main_thread = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, interrupted) if main_thread else None
    try:
        worker.start()
        # Wait on an event, not on join(): an interrupted join() can leave the thread
        # looking finished while it still runs.
        while not done.wait(0.1):
            pass
    finally:
        if main_thread:
            signal.signal(signal.SIGINT, signal.SIG_DFL if previous is None else previous)
    worker.join()
    if "error" in result:
        raise result["error"]
    return result["value"]


def main(argv: Sequence[str]) -> int:
    """Entry point of `campaign-planner measure`."""
    args = parser().parse_args(argv)
    from planner.figures.measurements import measurements_toml
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset
    from planner.tomlio import refuse_existing, write_atomic

    out = Path(args.out)
    refuse_existing([out], force=args.force)
    if out.is_dir():
        raise InputError("is a folder; give a file name", file=out, field="--out")
    preset, source = load_preset(args.preset)
    if preset.embedding is not None:
        # Batch widths count the prompt, as the plan's do.
        from planner.corpus.prompt_tokens import with_prompt

        preset = preset.model_copy(update={"embedding": with_prompt(preset.embedding)[0]})
    catalog = load_catalog(args.catalog)
    bar = Bar(sys.stderr)
    cancel = threading.Event()
    command = "campaign-planner measure " + shlex.join(list(argv))
    kwargs = dict(preset=preset, catalog=catalog, steps=args.steps, progress=bar,
                  device=args.device, threads=args.threads, source=source, command=command)
    code = 0
    try:
        m = _run_in_thread(kwargs, cancel)
    except MeasureUnavailable as exc:
        bar.close()
        print(f"campaign-planner: cannot measure here: {exc}", file=sys.stderr)
        return 3
    except MeasureOOM as exc:
        bar.close()
        print(f"campaign-planner: error: {exc}", file=sys.stderr)
        if exc.partial is None or not exc.partial.configs:
            return 1
        m, code = exc.partial, 1
    finally:
        bar.close()
    if cancel.is_set() and code == 0:
        code = 130
    if not m.configs:
        print("campaign-planner: nothing was measured; nothing written", file=sys.stderr)
        return code or 1
    write_atomic(out, measurements_toml(m), force=True)
    print(summary(m))
    state = " (partial: stopped early)" if m.partial else ""
    print(f"\nWrote {out}{state}. Plan with it:\n  campaign-planner --preset {args.preset} "
          f"--measurements {out}")
    if m.device.kind == "cpu":
        print("Measured on CPU: a smoke test. The plan takes its memory figures and keeps "
              "the step times it had (add --use-cpu-step-times to plan with the CPU's).")
    return code


def summary(m: Any) -> str:
    """The measurements as a table."""
    lines = [f"{m.preset} · {m.device.name} · torch {m.torch} · {m.dtype} · sized for "
             f"{m.target_card}",
             f"  {'config':<16} {'mb×acc':>7} {'step s':>9} {'p10–p90':>17} {'peak GiB':>9} "
             f"{'GFLOP/step':>11} {'TFLOPS':>7} {'MFU':>5}"]
    for c in m.configs:
        st = c.step_time
        step = f"{st.median_s:.4f}" if st else "—"
        spread = f"{st.p10_s:.4f}–{st.p90_s:.4f}" if st else ""
        tf = f"{c.achieved_tflops:.3f}" if c.achieved_tflops is not None else "—"
        mfu = f"{c.mfu:.0%}" if c.mfu is not None else "—"
        est = "~" if c.memory.method == "fake-tensor" else ""
        lines.append(f"  {c.config:<16} {c.micro_batch:>3}×{c.accumulation:<3} {step:>9} "
                     f"{spread:>17} {est + format(c.memory.peak_gib, '.3f'):>9} "
                     f"{c.flops_per_step / 1e9:>11.2f} {tf:>7} {mfu:>5}")
        if c.same_as:
            verb = "does" if len(c.ignored_factors) == 1 else "do"
            lines.append(f"    same workload as {c.same_as} ({', '.join(c.ignored_factors)} "
                         f"{verb} not change the step)")
        if c.batch is not None:
            b = c.batch
            more = "+" if b.largest >= b.limit else ""
            lines.append(f"    largest micro-batch on {b.card}: {b.largest}{more} "
                         f"({b.method}, {b.probes} probes"
                         f"{f', {b.oom_recoveries} OOM recovered' if b.oom_recoveries else ''})"
                         + (" — reduced" if b.reduced else ""))
        if c.hfu is not None:
            lines.append(f"    HFU {c.hfu:.0%} (the recompute of activation checkpointing "
                         "counted; MFU leaves it out)")
        lines += [f"    ! {flag}" for flag in c.flags]
    if any(c.memory.method == "fake-tensor" for c in m.configs):
        lines.append("  ~ fake-tensor estimate (no GPU): weights, gradients, optimizer states "
                     "and activations traced under FakeTensorMode")
    return "\n".join(lines)

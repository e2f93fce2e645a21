"""Fuzz: mutated presets, measurement files, catalogs, journals, corpora and command lines
never give a traceback. Each goes through the CLI's own main() in-process: exit 0 or 2, one
line on stderr for 2, and nothing written when the input is refused."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
import tomllib
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import tomli_w
from hypothesis import assume, given
from hypothesis import strategies as st

from planner.figures.measurements import measurements_toml
from planner.spec.loading import load_preset
from tests.fuzz_support import FUZZ, NASTY_TEXT, cli, mutated, tree, values
from tests.run_fixtures import harness as h
from tests.test_measure_plan import measurements

PRESETS = {name: tomllib.loads(resources.files("presets").joinpath(f"{name}.toml")
                               .read_text(encoding="utf-8"))
           for name in ("ablation-3d", "adaptation-30d", "embedding-3d")}
CATALOG = tomllib.loads(resources.files("presets").joinpath("cards.toml")
                        .read_text(encoding="utf-8"))
MEASURED = tomllib.loads(measurements_toml(measurements(load_preset("ablation-7d")[0])))


@contextlib.contextmanager
def folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as tmp:
        yield Path(tmp)


def _toml(path: Path, data: Any) -> Path:
    try:
        path.write_text(tomli_w.dumps(data), encoding="utf-8")
    except (TypeError, ValueError):
        assume(False)  # not writable as TOML: not an input anyone can hand over
    return path


def _plan_refuses_or_writes(args: list[str], tmp: Path) -> None:
    out = tmp / "out"
    rc, _, _ = cli([*args, "--out", str(out), "--created", "2026-01-01T00:00:00"])
    if rc == 2:
        assert not out.exists()
    else:
        assert {p.name for p in out.iterdir()} == {"plan.toml", "runs.jsonl", "order.toml"}
        # What was written reads back, and runs through `run --dry-run` cleanly.
        cli(["run", str(out), "--dry-run"])


@FUZZ
@given(name=st.sampled_from(sorted(PRESETS)), data=st.data())
def test_mutated_presets(name: str, data: st.DataObject) -> None:
    preset = data.draw(mutated(PRESETS[name]))
    with folder() as tmp:
        _plan_refuses_or_writes(["--preset", str(_toml(tmp / "p.toml", preset))], tmp)


@FUZZ
@given(data=mutated(MEASURED))
def test_mutated_measurement_files(data: dict[str, Any]) -> None:
    with folder() as tmp:
        m = _toml(tmp / "m.toml", data)
        _plan_refuses_or_writes(["--preset", "ablation-7d", "--measurements", str(m)], tmp)


@FUZZ
@given(data=mutated(CATALOG, max_mutations=4))
def test_mutated_catalogs(data: dict[str, Any]) -> None:
    with folder() as tmp:
        catalog = _toml(tmp / "cards.toml", data)
        cli(["cards", "--catalog", str(catalog)])
        _plan_refuses_or_writes(["--preset", "ablation-3d", "--catalog", str(catalog)], tmp)


@pytest.fixture(scope="module")
def planned() -> Iterator[Path]:
    with folder() as tmp:
        yield h.make_plan(tmp / "p", h.preset(seeds=(0,)))


EVENTS = [
    {"t": 1.0, "ev": "executor", "pid": 1, "cards": [0, 1], "window_start": 0.0},
    {"t": 2.0, "ev": "started", "run": "RUN", "attempt": 1, "cards": [0], "fingerprint": "f",
     "pid": 2**22, "pstart": 1, "boot": "b", "token": "t"},
    {"t": 3.0, "ev": "checkpointed", "run": "RUN", "attempt": 1, "mtime": 3.0},
    {"t": 4.0, "ev": "exited", "run": "RUN", "attempt": 1, "code": 0, "outcome": "finished"},
    {"t": 5.0, "ev": "reset", "run": "RUN"},
    {"t": 6.0, "ev": "stop", "signal": "SIGINT"},
]


@FUZZ
@given(data=st.data())
def test_mutated_journals(planned: Path, data: st.DataObject) -> None:
    run_ids = [r.id for r in h.load(planned).runs]
    lines = []
    for _ in range(data.draw(st.integers(1, 6))):
        kind = data.draw(st.sampled_from(["event", "mutated", "json", "bytes"]))
        if kind == "json":
            lines.append(json.dumps(data.draw(values)).encode())
        elif kind == "bytes":
            lines.append(data.draw(st.binary(max_size=30)).replace(b"\n", b" "))
        else:
            event = json.loads(json.dumps(data.draw(st.sampled_from(EVENTS)))
                               .replace("RUN", data.draw(st.sampled_from(run_ids))))
            lines.append(json.dumps(data.draw(mutated(event)) if kind == "mutated"
                                    else event).encode())
    journal = planned.parent / "campaign-run" / "journal.jsonl"
    journal.parent.mkdir(exist_ok=True)
    journal.write_bytes(b"\n".join(lines) + data.draw(st.sampled_from([b"\n", b""])))
    before = tree(planned.parent)
    cli(["status", str(planned)])
    cli(["status", str(planned), "--json"])
    cli(["run", str(planned), "--dry-run"])
    assert tree(planned.parent) == before


def _corpus_line(draw: st.DrawFn) -> bytes:
    row: dict[str, Any] = {}
    if draw(st.booleans()):
        row["id"] = draw(st.one_of(st.integers(), st.text(max_size=8), values))
    if draw(st.booleans()):
        row["text"] = draw(st.one_of(st.text(max_size=60), values))
    kind = draw(st.sampled_from(["row", "row", "row", "junk", "surrogate"]))
    if kind == "junk":
        return draw(st.binary(max_size=40)).replace(b"\n", b" ")
    text = json.dumps(row)
    if kind == "surrogate":
        text = text.replace("}", ', "text": "\\ud800x"}') if row else '{"id": "\\udfff"}'
    return text.encode()


@FUZZ
@given(data=st.data(), suffix=st.sampled_from([".jsonl", ".csv", ".tsv", ".parquet"]))
def test_mutated_corpora(data: st.DataObject, suffix: str) -> None:
    with folder() as tmp:
        p = tmp / f"corpus{suffix}"
        lines = [_corpus_line(data.draw) for _ in range(data.draw(st.integers(0, 8)))]
        if suffix in (".csv", ".tsv"):
            sep = b"," if suffix == ".csv" else b"\t"
            header = data.draw(st.sampled_from([b"id" + sep + b"text", b"text", b""]))
            lines = [header] + [x.replace(b",", sep) for x in lines]
        p.write_bytes(b"\n".join(lines))
        before = tree(tmp)
        cli(["corpus", "scan", str(p), "--preset", "embedding-3d", "--tokenizer", "none/none",
             "--quiet"])
        assert tree(tmp) == before


SUBCOMMANDS = [[], ["cards"], ["schema"], ["presets"], ["status", "PLAN"],
               ["run", "PLAN", "--dry-run"], ["slurm", "PLAN"], ["corpus", "scan"]]
FLAGS = ["--preset", "--out", "--force", "--json", "--created", "--catalog", "--measurements",
         "--contact-name", "--contact-email", "--cards", "--poll", "--grace", "--workdir",
         "--window-start", "--accept-changed-plan", "--retry-failed", "--time", "--throttle",
         "--partition", "--cpus-per-task", "--mem", "--tokenizer", "--id-field",
         "--text-field", "--corpus", "ablation-3d", "embedding-3d", "PLAN", "-", "--"]


@FUZZ
@given(sub=st.sampled_from(SUBCOMMANDS),
       rest=st.lists(st.one_of(st.sampled_from(FLAGS), st.sampled_from(NASTY_TEXT),
                               st.text(max_size=10)), max_size=6))
def test_random_command_lines(planned: Path, sub: list[str], rest: list[str]) -> None:
    argv = [a.replace("PLAN", str(planned)) for a in [*sub, *rest]]
    # The terminal UI and anything that would start real work are not for a fuzzer.
    assume(not any(a.startswith("--t") and "--tui".startswith(a) for a in argv))
    assume(not any(a.startswith("--h") for a in argv) and "-h" not in argv)
    with folder() as tmp:
        cwd = Path.cwd()
        os.chdir(tmp)
        try:
            cli(argv)
        finally:
            os.chdir(cwd)


@FUZZ
@given(data=st.data())
def test_mutated_plans(planned: Path, data: st.DataObject) -> None:
    # The plan as one file holding its run tables (as a plan.toml may), so that mutations
    # reach the runs too.
    plan = data.draw(mutated(h.plan_data(planned), max_mutations=2))
    with folder() as tmp:
        p = _toml(tmp / "plan.toml", plan)
        before = tree(tmp)
        cli(["status", str(p), "--json"])
        cli(["run", str(p), "--dry-run"])
        assert tree(tmp) == before
        rc, _, _ = cli(["slurm", str(p), "--out", str(tmp / "slurm")])
        assert (rc == 2) == (not (tmp / "slurm").exists())


FRAGMENTS = ["echo", "printf '%s\\n'", "true", "cat", "sh", "-c", "{v}", "'{v}'", '"{v}"',
             '"a {v} b"', "x{v}y", "--x={v}", "{overrides}", "#", "# {v}", "\n", ";", "&&",
             "||", "|", ">/dev/null", "$(echo {v})", "`echo {v}`", '"$(echo "{v}")"',
             "sh -c 'echo {v}'", "sh -c 'echo \"$1\"' sh {v}", "<<EOF\n{v}\nEOF\n",
             "<<-'E'\n\tx {v}\n\tE\n", "<<<", "eval", "trap", "${{X:-{v}}}", "$", "\\",
             "'", '"', "(", ")", "{{", "}}", "[[", "]]", "((", "))", "${v}", "$HOME",
             "A=1", "env", "*.txt", "~"]
MARKER_VALUES = ["$(touch MARKER)", "`touch MARKER`", "; touch MARKER", "' ; touch MARKER; '",
                 "\" ; touch MARKER; \"", "x # ; touch MARKER", "-c", "touch MARKER",
                 "$(touch MARKER)'\"`touch MARKER`"]


@FUZZ
@given(parts=st.lists(st.sampled_from(FRAGMENTS), min_size=1, max_size=8),
       joiner=st.sampled_from([" ", ""]), shell=st.booleans(),
       value=st.sampled_from(MARKER_VALUES))
def test_mutated_templates_never_run_a_value(parts: list[str], joiner: str, shell: bool,
                                             value: str) -> None:
    """Whatever template the grammar accepts, a value never runs as code: the filled
    command, started as `run` starts it, leaves no marker."""
    import shlex
    import subprocess

    from planner.spec.templates import Args, check_template, fill

    template = joiner.join(parts).replace("{v}", "{factors[v]}")
    try:
        check_template(template, frozenset({"factors", "overrides"}), shell)
    except ValueError:
        return  # refused at load, with a message: nothing runs
    argv, shown = fill(template, {"factors": {"v": value}, "overrides": Args((f"v={value}",))},
                       shell)
    assert shown == (argv[2] if shell else shlex.join(argv))
    if not shell:
        assert shlex.split(shown) == argv
    with folder() as tmp:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            subprocess.run(argv, cwd=tmp, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=5, env={"PATH": os.environ["PATH"]})
        assert not (tmp / "MARKER").exists(), (template, value, argv)


PLAN_TEXT = [*NASTY_TEXT, "x\x1b[2J", "x\ry", "x\ttab", "\x00", "sh", "-c", "/bin/sh"]


@FUZZ
@given(data=st.data())
def test_mutated_plan_commands_and_names(planned: Path, data: st.DataObject) -> None:
    """Edits of what names and starts runs: read back, either refused in one line or
    consistent (each command the display of its argument vector)."""
    from planner.planfile.export import read_plan
    from planner.spec.templates import display

    plan = h.plan_data(planned)
    run = data.draw(st.sampled_from(plan["runs"]))
    for _ in range(data.draw(st.integers(1, 3))):
        field = data.draw(st.sampled_from(["argv", "command", "shell", "id", "variant",
                                           "factor", "campaign.id", "campaign.name"]))
        text = st.sampled_from(PLAN_TEXT)
        value: Any = data.draw(st.one_of(text, st.lists(text, max_size=4), st.booleans()))
        if field.startswith("campaign."):
            plan["campaign"][field.split(".")[1]] = value
        else:
            run[field] = value
    with folder() as tmp:
        p = tmp / "plan.toml"
        h.write_plan_data(p, plan)  # as its author edits it: runs.jsonl, unsealed
        rc, _, _ = cli(["status", str(p)])
        if rc == 0:
            for r in read_plan(p).runs:
                assert r.command == display(r.argv, r.shell) and r.argv[0]

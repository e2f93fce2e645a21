"""The claims of speed of the README and the docs pages stay tied to the benchmarks that
measure them: a paragraph that states a time or a memory peak cites a benchmark command, and
every benchmark command they give names a script that exists and takes the options written after it.

Figures themselves are machine-dependent and are not checked here: the benchmark prints
them beside the load average (speed is never asserted in tests)."""

from __future__ import annotations

import re
from pathlib import Path

from tests.readme_examples import pages

ROOT = Path(__file__).resolve().parent.parent
README = "\n\n".join(path.read_text(encoding="utf-8") for path in pages())
"""The README and every docs page: a claim of speed is held to its benchmark on any of them."""

SPEED = re.compile(
    r"\b(?:in|takes?|took|taking|under|within) (?:about |under |well under |less than )?"
    r"\d[\d,.]* ?(?:ms|s|seconds|minutes)\b|\d[\d,.]* ?[MG]i?B peak\b|\bpeak of \d")
"""A stated duration of work ("scans in 8 s", "takes 2 s") or a memory peak."""

CITED = re.compile(r"benchmarks/([\w-]+\.py)((?:[ \[]+--[\w-]+(?: [\w.-]+)?\]?)*)")
"""A benchmark command, with the options written after it."""


def paragraphs(text: str) -> list[str]:
    return [p for p in re.split(r"\n\s*\n", text) if p.strip()]


def test_the_speed_patterns_see_a_typed_claim_and_its_citation() -> None:
    claim = "A 209 MB line scans in 8 s with a 55 MiB peak."
    assert [m.group(0) for m in SPEED.finditer(claim)] == ["in 8 s", "55 MiB peak"]
    assert not SPEED.search("Times are compared with a tolerance of 1e-6 h (3.6 ms).")
    cited = "`python benchmarks/bench_embed.py --documents 2000 --rounds 2 --threads 1`"
    assert CITED.findall(cited) == [("bench_embed.py",
                                     " --documents 2000 --rounds 2 --threads 1")]


def test_every_claim_of_speed_in_the_readme_cites_its_benchmark() -> None:
    uncited = [f"{', '.join(m.group(0) for m in SPEED.finditer(p))}: {p[:80]!r}"
               for p in paragraphs(README) if SPEED.search(p) and "benchmarks/" not in p]
    assert uncited == []


def test_every_benchmark_the_readme_cites_exists_and_takes_its_options() -> None:
    cited = CITED.findall(README)
    assert {"bench_corpus_line.py", "bench_tui.py"} <= {name for name, _ in cited}
    for name, options in cited:
        script = ROOT / "benchmarks" / name
        assert script.is_file(), name
        source = script.read_text(encoding="utf-8")
        for option in re.findall(r"--[\w-]+", options):
            assert f'"{option}"' in source, f"{name} {option}"


def test_the_huge_line_scan_is_measured_by_its_benchmark() -> None:
    (para,) = [p for p in paragraphs(README) if "as a stream" in p]
    assert "python benchmarks/bench_corpus_line.py" in para
    source = (ROOT / "benchmarks" / "bench_corpus_line.py").read_text(encoding="utf-8")
    assert '"corpus", "scan"' in source and "getloadavg" in source

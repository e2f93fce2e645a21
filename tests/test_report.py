"""`campaign-planner report`: the HTML report's contents, the static image, and the rules
every output follows (atomic, never overwritten silently, bad input one line and exit 2)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from planner.cli.main import main
from planner.planfile.export import read_plan
from planner.run.params import run_fingerprint
from tests.conftest import plan_dict, shipped
from tests.run_fixtures import harness as h

pytest.importorskip("plotly", reason="the report needs the `report` extra (plotly)")
CREATED = "2026-01-01T00:00:00Z"


def export(tmp_path: Path, preset: str | dict[str, Any] = "ablation-7d") -> Path:
    """A plan exported the ordinary way; its folder."""
    name = preset if isinstance(preset, str) else str(preset["campaign"]["name"])
    if isinstance(preset, dict):
        import tomli_w

        src = tmp_path / f"{name}.toml"
        src.write_text(tomli_w.dumps(preset), encoding="utf-8")
        preset = str(src)
    out = tmp_path / name
    assert main(["--preset", preset, "--out", str(out), "--created", CREATED]) == 0
    return out


def figure_json(html: str, n: int = 0) -> dict[str, Any]:
    """The data and layout of the page's chart `n`, as plotly received them."""
    start = html.index(f'"chart-{n}",')
    data = html[start + len(f'"chart-{n}",'):]
    decoder = json.JSONDecoder()
    traces, end = decoder.raw_decode(data.lstrip())
    layout, _ = decoder.raw_decode(data.lstrip()[end:].lstrip(", "))
    return {"data": traces, "layout": layout}


def test_report_beside_the_plan_holds_everything(tmp_path: Path,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = export(tmp_path, "ablation-30d")
    capsys.readouterr()
    assert main(["report", str(out / "plan.toml")]) == 0
    page = out / "report.html"
    assert capsys.readouterr().out == f"Wrote {page}\n"
    html = page.read_text(encoding="utf-8")
    plan = read_plan(out / "plan.toml")
    # Self-contained: plotly.js inside the page, no script fetched.
    assert "plotly.js v" in html and not re.search(r"<script[^>]*\ssrc=", html)
    for heading in ("Schedule", "Memory", "Hours and money", "What does not fit"):
        assert f"<h2>{heading}" in html
    gantt = figure_json(html)
    bars = [t for t in gantt["data"] if t["type"] == "bar"]
    ids = sorted(i[0] for t in bars for i in t["customdata"])
    assert ids == sorted(r.id for r in plan.runs)
    assert {t["name"] for t in bars} == {f.config for f in plan.assumptions.figures}
    first = next(t for t in bars if t["name"] == "baseline" and "baseline·0" in t["text"])
    assert "step time 3.6 s: entered" in first["hovertemplate"]
    assert "micro-batch" in first["hovertemplate"] and "steps" in first["hovertemplate"]
    evals = [t for t in bars if t["marker"]["pattern"]["shape"] == "/"]
    assert sum(len(t["text"]) for t in evals) == sum(r.kind == "robustness" for r in plan.runs)
    assert any("evaluates" in i[5] for t in evals for i in t["customdata"])
    shapes = gantt["layout"]["shapes"]
    assert any(s.get("x0") == plan.campaign.usable_until_h == s.get("x1") for s in shapes)
    assert any(s.get("x0") == 0 and s.get("x1") == plan.campaign.usable_from_h for s in shapes)
    memory = figure_json(html, 1)
    assert memory["data"][1]["y"] == ["no-act-ckpt"]  # the one reduced micro-batch
    assert "mb 8 × 8" in " ".join(memory["data"][0]["text"])
    assert "Every run of the campaign fits" in html


def test_same_plan_gives_the_same_bytes_and_is_never_overwritten_silently(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = export(tmp_path)
    plan = str(out / "plan.toml")
    assert main(["report", plan]) == 0
    page = out / "report.html"
    first = page.read_bytes()
    capsys.readouterr()
    assert main(["report", plan]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "already exists; pass --force" in err
    assert main(["report", plan, "--force"]) == 0
    assert page.read_bytes() == first
    assert not list(out.glob(".*.tmp"))


@pytest.mark.parametrize("args, says", [
    (["report"], "give a plan (PLAN) or --from-preset"),
    (["report", "PLAN", "--from-preset", "ablation-7d"], "give a plan (PLAN) or"),
    (["report", "missing/plan.toml"], "file not found"),
    (["report", "--from-preset", "no-such-preset"], "no shipped preset"),
    (["report", "--from-preset", "ablation-7d", "--out", "x.svg", "--format", "png"],
     "--out: names a .svg file but --format is png"),
    (["report", "--from-preset", "ablation-7d", "--workdir", "nowhere"], "is not a folder"),
    (["report", "--from-preset", "ablation-7d", "--format", "gif"], "invalid choice"),
])
def test_bad_input_is_one_line_exit_2_and_nothing_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        args: list[str], says: str) -> None:
    monkeypatch.chdir(tmp_path)
    if "PLAN" in args:
        args[args.index("PLAN")] = str(export(tmp_path) / "plan.toml")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    assert main(args) == 2
    err = capsys.readouterr().err
    assert says in err and err.strip().count("\n") == 0 and "Traceback" not in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_broken_plan_file_names_the_file(tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "plan.toml"
    bad.write_text("[campaign]\nid = 3\n", encoding="utf-8")
    assert main(["report", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err and err.count("\n") == 1
    assert not (tmp_path / "report.html").exists()


def test_missing_library_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "plotly" else real(name, *a))
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--from-preset", "ablation-7d"]) == 2
    assert "pip install 'campaign-planner[report]'" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())


def test_from_preset_writes_in_the_current_folder(tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["report", "--from-preset", "embedding-7d", "--created", CREATED]) == 0
    html = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Shards on the cards" in html and "Padding: original order" in html
    assert "35.9% padding" in html and "0.1% padding" in html
    shards = next(n for n in range(6) if f'"chart-{n}",' in html
                  and '"stackgroup":"cards"' in html[html.index(f'"chart-{n}",'):][:4000])
    traces = figure_json(html, shards)["data"]
    assert sum(t["y"][-1] for t in traces) == 2000  # every shard of the version, once


@pytest.mark.parametrize("fmt, magic", [("svg", b"<svg"), ("png", b"\x89PNG")])
def test_static_image_of_the_gantt(tmp_path: Path, fmt: str, magic: bytes) -> None:
    out = export(tmp_path)
    assert main(["report", str(out), "--format", fmt]) == 0
    data = (out / f"report.{fmt}").read_bytes()
    assert magic in data[:400]
    if fmt == "svg":
        text = data.decode()
        plan = read_plan(out / "plan.toml")
        assert "baseline·0" in text and plan.campaign.name in text
    # The format follows the file's name when --format is not given.
    assert main(["report", str(out), "--out", str(tmp_path / f"g.{fmt}")]) == 0
    assert magic in (tmp_path / f"g.{fmt}").read_bytes()[:400]


def test_what_does_not_fit_and_why(tmp_path: Path) -> None:
    data = shipped("ablation-7d")
    data["campaign"]["cards"] = 1
    out = export(tmp_path, data)
    plan = read_plan(out / "plan.toml")
    assert plan.not_fitting
    assert main(["report", str(out)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "What does not fit, and why" in html
    from html import escape

    for item in plan.not_fitting:
        assert escape(item.id) in html and escape(item.reason) in html


def test_workdir_shows_actual_against_planned_and_now(tmp_path: Path) -> None:
    out = export(tmp_path)
    plan = read_plan(out / "plan.toml")
    now = time.time()
    origin = now - 40 * 3600
    events: list[dict[str, Any]] = [{"t": origin, "ev": "executor", "cards": [0, 1, 2, 3],
                                     "window_start": origin, "pid": 1}]
    done = plan.runs[:3]
    for run in done:
        t0 = origin + run.start_h * 3600
        events += [{"t": t0, "ev": "started", "run": run.id, "attempt": 1, "cards": run.card,
                    "fingerprint": run_fingerprint(run), "pid": 0},
                   {"t": t0 + (run.end_h - run.start_h) * 1.2 * 3600, "ev": "exited",
                    "run": run.id, "attempt": 1, "code": 0, "outcome": "finished"}]
    (out / "campaign-run").mkdir()
    (out / "campaign-run" / "journal.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    assert main(["report", str(out), "--workdir", str(out)]) == 0
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<h2>Actual against planned" in html and "1.20× planned" in html
    for run in plan.runs:
        assert f"<td>{run.id}</td>" in html
    gantt = figure_json(html)
    actual = next(t for t in gantt["data"] if t.get("name") == "actual")
    assert sorted(i[0] for i in actual["customdata"]) == sorted(r.id for r in done)
    assert any("now, h 40" in a.get("text", "") for a in gantt["layout"]["annotations"])


def test_capacity_is_shown_when_the_plan_has_it() -> None:
    from planner.report.page import _capacity_html

    plan = SimpleNamespace(summary=SimpleNamespace(capacity={"more_seeds": 2, "hours": 1.5}))
    text = _capacity_html(plan)  # type: ignore[arg-type]
    assert "How much fits" in text and "more seeds" in text and "1.5" in text
    real = plan_dict(shipped("ablation-7d"))
    if getattr(real.summary, "capacity", None) is None:
        assert _capacity_html(real) == ""
    else:
        assert "How much fits" in _capacity_html(real)


def test_neither_a_plan_nor_importing_the_report_loads_plotly(tmp_path: Path) -> None:
    code = ("import sys\nfrom planner.cli.main import main\n"
            "rc = main(['--preset', 'ablation-7d', '--out', sys.argv[1]])\n"
            "import planner.cli.report, planner.report.write, planner.report.page\n"
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'plotly', 'matplotlib', 'PIL'}))")
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "o")],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "0 []"


def test_the_readme_example_prints_what_it_shows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tests.readme_examples import page_with
    readme = page_with("# A picture of the plan")
    block = readme[readme.index("# A picture of the plan"):]
    shown = re.search(r"\n    \$ campaign-planner (report [^\n]+)\n((?:    [^$\n][^\n]*\n)+)",
                      block)
    assert shown is not None
    monkeypatch.chdir(tmp_path)
    assert main(["--preset", "ablation-7d", "--out", "plans/demo"]) == 0
    capsys.readouterr()
    assert main(shown.group(1).split()) == 0
    want = "".join(line[4:] + "\n" for line in shown.group(2).splitlines())
    assert capsys.readouterr().out == want
    picture = re.search(r"!\[[^]]*\]\(([^)]+\.png)\)", block)
    assert picture is not None
    assert (Path(__file__).resolve().parent.parent / "docs" / picture.group(1)).is_file()


def test_many_variants_share_one_trace_and_keep_their_colour_and_provenance() -> None:
    from planner.report.gantt import LEGEND_GROUPS, gantt

    data = shipped("ablation-7d")
    base = data["ablation"]["variants"][0]
    data["ablation"]["variants"] = [
        {**base, "name": f"v{i}", "changes": {"lr": float(i + 2)},
         "step_time_s": {"value": 0.5 + i * 0.01, "source": "entered"}}
        for i in range(LEGEND_GROUPS + 5)]
    data["ablation"]["baseline"]["factors"]["lr"] = 1.0
    data["ablation"]["seeds"] = [0]
    data["ablation"]["robustness"] = []
    plan = plan_dict(data)
    fig = gantt(plan)
    bars = [t for t in fig.data if t.type == "bar"]
    assert len(bars) == 1 and len(bars[0].x) == len(plan.runs)
    from planner.report.bars import groups
    from planner.report.palette import colour_of

    colours = colour_of(groups(plan))
    variant = {r.id: r.variant for r in plan.runs}
    assert list(bars[0].marker.color) == [colours[variant[c[0]]] for c in bars[0].customdata]
    assert len(set(bars[0].marker.color)) > LEGEND_GROUPS / 2
    v3 = next(c for c in bars[0].customdata if c[0].endswith("-v3-s0"))
    assert "v3" in v3[6] and "step time 0.53 s: entered" in v3[6]
    assert "%{customdata[6]}" in bars[0].hovertemplate


def test_names_from_an_edited_plan_stay_text(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    # plan.toml is a file people edit: a variant named like markup is refused when the plan
    # is read back, and a name that reaches the drawing all the same is drawn as its text.
    from planner.report.write import render

    out = export(tmp_path)
    text = (out / "plan.toml").read_text(encoding="utf-8")
    runs_text = (out / "runs.jsonl").read_text(encoding="utf-8")
    odd = '<a href="http://example.invalid/">x</a> $y$'
    h.edit_plan(out / "plan.toml", 0, variant=odd)
    assert main(["report", str(out)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "variant" in err
    assert not (out / "report.html").exists()
    (out / "plan.toml").write_text(text, encoding="utf-8")
    (out / "runs.jsonl").write_text(runs_text, encoding="utf-8")
    plan = read_plan(out / "plan.toml")
    runs = [r.model_copy(update={"variant": odd.replace("\\", "")})
            if r.variant == "baseline" else r for r in plan.runs]
    plan = plan.model_copy(update={"runs": runs})
    html = render(plan, "html", None)
    html = html.decode() if isinstance(html, bytes) else html
    assert "&lt;a href=" in html or "\\u0026lt;a href=" in html
    assert "<a href" not in html.split("<script>")[0]
    svg = render(plan, "svg", None)
    svg = svg.decode() if isinstance(svg, bytes) else svg
    assert "example.invalid" in svg  # drawn as text, not parsed as mathematics or markup


def test_the_static_image_has_the_same_bytes_for_the_same_plan(tmp_path: Path) -> None:
    out = export(tmp_path)
    for fmt in ("svg", "png"):
        assert main(["report", str(out), "--format", fmt]) == 0
        first = (out / f"report.{fmt}").read_bytes()
        assert main(["report", str(out), "--format", fmt, "--force"]) == 0
        assert (out / f"report.{fmt}").read_bytes() == first

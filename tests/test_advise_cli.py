"""`campaign-planner advise`: output, JSON, export of an option, and bad arguments."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import tomli_w

from planner.advise.search import order_preset
from planner.cli.advise import JSON_FIELDS
from planner.cli.main import main
from planner.spec.catalog import load_catalog
from planner.spec.loading import load_preset

CREATED = "2026-01-01T00:00:00+00:00"
SMALL = ["--cards", "a6000,a40,l40s", "--counts", "2-5", "--windows", "7,30"]


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    f = tmp_path / "prices.toml"
    f.write_text("[cards.a6000]\nprice_per_card_hour = 0.49\n"
                 "[cards.a40]\nprice_per_card_hour = 0.44\n"
                 "[cards.l40s]\nprice_per_card_hour = 0.86\n")
    return f


def test_text_lists_options_cheapest_first(prices: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--preset", "ablation-7d", "--catalog", str(prices), *SMALL]) == 0
    out = capsys.readouterr().out
    assert "ablation-7d: 24 orders planned — 3 card models × counts 2–5 × 7, 30 days" in out
    assert "ranked cheapest first" in out
    assert "Smallest count that meets the goal" in out
    # ● marks the preset's own order, which now meets the goal and ranks first.
    first = next(line for line in out.splitlines() if line.strip().lstrip("● ").startswith("1 "))
    assert "USD" in first and "18/18" in first


def test_unpriced_text_says_it_ranks_by_card_hours(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--preset", "ablation-7d", *SMALL]) == 0
    out = capsys.readouterr().out
    assert "ranked by fewest card-hours bought: no price known" in out


def test_json_lists_options_best_first(prices: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--preset", "ablation-7d", "--catalog", str(prices), "--json",
                 *SMALL]) == 0
    options = json.loads(capsys.readouterr().out)
    assert options and all(set(JSON_FIELDS) <= set(o) for o in options)
    costs = [o["cost_total"] for o in options]
    assert costs == sorted(costs)
    assert all(o["runs_fit"] == o["runs_total"] == 18 for o in options)
    assert options[0]["currency"] == "USD" and options[0]["provenance"]


def test_nothing_meets_the_goal(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--preset", "ablation-30d", "--cards", "a6000", "--counts", "1",
                 "--windows", "3"]) == 0
    out = capsys.readouterr().out
    assert "No order in the space meets the goal all." in out
    assert "cannot finish in the 57.0 usable hours" in out
    assert main(["advise", "--preset", "ablation-30d", "--cards", "a6000", "--counts", "1",
                 "--windows", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_out_writes_the_option_as_planning_it_directly(tmp_path: Path, prices: Path) -> None:
    """The picked option's files are byte for byte those of `campaign-planner --preset
    <that order> --out`."""
    advised = tmp_path / "advised"
    assert main(["advise", "--preset", "ablation-7d", "--catalog", str(prices), *SMALL,
                 "--json", "--out", str(advised), "--pick", "2", "--created", CREATED]) == 0
    picked = _option(prices, 2)
    preset, _ = load_preset("ablation-7d")
    moved = order_preset(preset, load_catalog(prices), picked["card"], picked["cards"],
                         picked["window_days"])
    file = tmp_path / "order-preset.toml"
    file.write_text(tomli_w.dumps(moved.model_dump(mode="json", exclude_none=True)))
    direct = tmp_path / "direct"
    assert main(["--preset", str(file), "--catalog", str(prices), "--created", CREATED,
                 "--out", str(direct)]) == 0
    for name in ("plan.toml", "order.toml"):
        assert (advised / name).read_bytes() == (direct / name).read_bytes(), name
    order = (advised / "order.toml").read_text()
    assert f'card = "{picked["card"]}"' in order and f"cards = {picked['cards']}" in order
    assert f"duration_days = {picked['window_days']}" in order


def _option(prices: Path, pick: int) -> dict[str, object]:
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        assert main(["advise", "--preset", "ablation-7d", "--catalog", str(prices), *SMALL,
                     "--json"]) == 0
    return json.loads(buf.getvalue())[pick - 1]  # type: ignore[no-any-return]


def test_out_keeps_the_plan_commands_overwrite_rule(tmp_path: Path, prices: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    args = ["advise", "--preset", "ablation-7d", "--catalog", str(prices), *SMALL, "--out",
            str(out)]
    assert main(args) == 0
    assert "Wrote option 1" in capsys.readouterr().out
    (out / "plan.toml").write_text("mine")
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--force" in err and err.count("\n") == 1
    assert (out / "plan.toml").read_text() == "mine"
    assert main([*args, "--force"]) == 0
    assert (out / "plan.toml").read_text() != "mine"


@pytest.mark.parametrize(("args", "words"), [
    (["--counts", "0-3"], "--counts: '0-3': counts run from 1"),
    (["--counts", "5-2"], "low to high"),
    (["--counts", "four"], "--counts: not a count"),
    (["--windows", "5"], "--windows: 5 days cannot be ordered"),
    (["--windows", ","], "--windows: no window given"),
    (["--cards", "nope"], "--cards: unknown card 'nope'"),
    (["--cards", ","], "--cards: no card given"),
    (["--goal", "most"], "--goal: not a goal"),
    (["--goal", "seeds:1001"], "--goal: seeds:1001: a campaign lists at most 1000 seeds"),
    (["--goal", "runs:99"], "--goal: the matrix has 18 training runs"),
    (["--goal", "versions:1"], "--goal: versions:K is for embedding campaigns"),
    (["--budget", "100"], "--budget: a budget needs prices"),
    (["--budget", "-5"], "--budget: the budget must be a positive amount"),
    (["--budget", "lots"], "invalid float value"),
    (["--estimate", "optimistic"], "invalid choice: 'optimistic'"),
    (["--pick", "2"], "--pick: --pick N (N from 1) chooses the option"),
    (["--top", "0"], "--top: list at least 1 option"),
    (["--preset", "nowhere.toml"], "nowhere.toml: file not found"),
    (["--contact-name", "Ada"], "--contact-email: give both"),
])
def test_bad_arguments_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                       args: list[str], words: str) -> None:
    assert main(["advise", *args]) == 2
    captured = capsys.readouterr()
    assert words in captured.err, captured.err
    assert captured.err.count("\n") == 1 and captured.out == ""
    assert "Traceback" not in captured.err


def test_pick_beyond_the_options_writes_nothing(tmp_path: Path, prices: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    assert main(["advise", "--preset", "ablation-7d", "--catalog", str(prices), "--cards",
                 "a6000", "--counts", "5", "--windows", "7", "--out", str(out),
                 "--pick", "3"]) == 2
    assert "--pick: only 1 option meets the goal" in capsys.readouterr().err
    assert not out.exists()
    assert main(["advise", "--preset", "ablation-30d", "--cards", "a6000", "--counts", "1",
                 "--windows", "3", "--out", str(out)]) == 2
    assert "no order meets the goal 'all': nothing written" in capsys.readouterr().err
    assert not out.exists()


def test_goal_for_an_embedding_campaign(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--preset", "embedding-7d", "--goal", "seeds:1"]) == 2
    assert "seeds:K is for training campaigns" in capsys.readouterr().err
    assert main(["advise", "--preset", "embedding-7d", "--goal", "versions:1", "--cards",
                 "a6000,l40s", "--json"]) == 0
    options = json.loads(capsys.readouterr().out)
    assert options and all(o["runs_fit"] >= 1 and o["complete_seeds"] is None
                           for o in options)


def test_estimate_is_accepted(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["advise", "--preset", "ablation-3d", "--estimate", "cautious", *SMALL,
                 "--json"]) == 0
    assert json.loads(capsys.readouterr().out)


def test_advise_loads_neither_textual_nor_torch() -> None:
    import subprocess
    import sys

    code = ("import sys, io, contextlib\nfrom planner.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    rc = main(['advise', '--preset', 'ablation-7d'])\n"
            "print(rc, sorted(m for m in sys.modules if m.split('.')[0] in "
            "{'textual', 'torch', 'screens'}))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip() == "0 []"


def test_a_long_search_shows_a_progress_line(monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    import planner.cli.advise

    monkeypatch.setattr(planner.cli.advise, "PROGRESS_AFTER_S", 0.0)
    assert main(["advise", "--preset", "ablation-7d", *SMALL, "--json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == "advise: planning 24 orders…\n"
    assert json.loads(captured.out)

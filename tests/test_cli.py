"""The headless CLI: exit codes, messages, and nothing written on error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli.main import main

CREATED = "2026-01-01T00:00:00+00:00"


def run(*args: str) -> int:
    return main(list(args))


def test_default_preset_writes_both_files(tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "plans" / "demo"
    assert run("--preset", "ablation-7d", "--out", str(out)) == 0
    text = capsys.readouterr().out
    assert (out / "plan.toml").is_file() and (out / "order.toml").is_file()
    assert "7 days × 4 × NVIDIA RTX A6000 = 672 card-hours bought" in text
    assert "18 of 18 runs fit (optimal)" in text
    assert "Does not fit" not in text and "Warnings" in text
    assert f"Wrote {out / 'plan.toml'}" in text


def test_same_preset_and_created_give_identical_bytes(tmp_path: Path) -> None:
    for name in ("a", "b"):
        assert run("--preset", "ablation-30d", "--created", CREATED, "--out",
                   str(tmp_path / name)) == 0
    for f in ("plan.toml", "order.toml"):
        assert (tmp_path / "a" / f).read_bytes() == (tmp_path / "b" / f).read_bytes()


def test_existing_plan_is_not_overwritten_without_force(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "p"
    assert run("--preset", "ablation-3d", "--out", str(out)) == 0
    (out / "plan.toml").write_text("mine")
    capsys.readouterr()
    assert run("--preset", "ablation-3d", "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert "plan.toml" in err and "--force" in err and err.count("\n") == 1
    assert (out / "plan.toml").read_text() == "mine"
    assert run("--preset", "ablation-3d", "--out", str(out), "--force") == 0
    assert (out / "plan.toml").read_text() != "mine"


BAD = {
    "malformed": ("[campaign\nname = 1\n", "not valid TOML"),
    "unknown-key": (None, "unknown key"),
}


@pytest.mark.parametrize(
    ("content", "words"),
    [
        ("[campaign\nname = 'x'\n", "not valid TOML"),
        ("[campaign]\nname = 'x'\nkind = 'ablation'\nwindow_days = 7\ncard = 'a6000'\n"
         "cards = 4\ncolour = 'red'\n", "campaign.colour: unknown key"),
        ("[campaign]\nname = 'x'\nkind = 'ablation'\nwindow_days = 7\ncard = 'zz'\n"
         "cards = 4\n", "campaign.kind: is 'ablation' but the preset has no [ablation]"),
        (b"\xff\xfe".decode("latin-1"), "not UTF-8"),
    ],
    ids=["malformed", "unknown-key", "missing-section", "not-utf8"],
)
def test_bad_file_exits_2_with_one_line_and_writes_nothing(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, words: str) -> None:
    preset = tmp_path / "bad.toml"
    if content.startswith("ÿ"):
        preset.write_bytes(b"\xff\xfe")
    else:
        preset.write_text(content)
    out = tmp_path / "out"
    assert run("--preset", str(preset), "--out", str(out)) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.count("\n") == 1
    assert str(preset) in captured.err and words in captured.err
    assert "Traceback" not in captured.err
    assert not out.exists()


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--preset", "no-such-preset"], "no shipped preset 'no-such-preset'"),
        (["--preset", "missing/file.toml"], "missing/file.toml: file not found"),
        (["--created", "yesterday"], "--created: not an ISO 8601"),
        (["--contact-name", "Ada"], "--contact-email: give both"),
        (["--contact-name", "Ada", "--contact-email", "nope"], "not a valid email"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
        (["--catalog", "nowhere.toml"], "nowhere.toml: file not found"),
    ],
)
def test_bad_arguments_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              args: list[str], words: str) -> None:
    out = tmp_path / "out"
    assert run(*args, "--out", str(out)) == 2
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert not out.exists()


def test_out_is_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "file"
    f.write_text("x")
    assert run("--out", str(f)) == 2
    assert "exists and is not a folder" in capsys.readouterr().err


def test_contact_makes_the_order_ready(tmp_path: Path) -> None:
    out = tmp_path / "o"
    assert run("--out", str(out), "--contact-name", "Ada Lovelace",
               "--contact-email", "ada@example.org") == 0
    text = (out / "order.toml").read_text()
    assert 'status = "ready"' in text and 'email = "ada@example.org"' in text
    assert 'payment = "crypto"' in text


def test_user_catalog_prices_a_shipped_card(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cat = tmp_path / "mine.toml"
    cat.write_text("[cards.a6000]\nprice_per_card_hour = 0.49\n")
    assert run("--catalog", str(cat), "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["summary"]["cost_total"] == round(0.49 * 672, 2)
    assert doc["order"]["estimated_total"] == round(0.49 * 672, 2)


def test_json_summary(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("--preset", "embedding-7d", "--json") == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["campaign"]["kind"] == "embedding"
    assert doc["embedding"]["versions_fit"] == 1
    assert doc["written"] == []


def test_presets_cards_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert run("presets") == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 7
    assert any(line.startswith("ablation-7d") and "(default)" in line for line in lines)
    assert run("cards") == 0
    out = capsys.readouterr().out
    for key in ("a6000", "a40", "rtx6000ada", "l40s", "a100-80", "a100-pcie-40", "h100-sxm",
                "h100-pcie", "h200"):
        assert f"\n{key} " in out
    assert run("schema") == 0
    schema = json.loads(capsys.readouterr().out)
    cards = schema["$defs"]["Campaign"]["properties"]["cards"]
    assert cards["description"] == "Number of cards rented."
    assert schema["additionalProperties"] is False


def test_python_dash_m(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "planner", "presets"], capture_output=True,
                          text=True, cwd=tmp_path, check=False)
    assert proc.returncode == 0 and "ablation-7d" in proc.stdout


def test_exports_get_ordinary_file_modes(tmp_path: Path) -> None:
    import os

    out = tmp_path / "m"
    assert run("--out", str(out)) == 0
    mask = os.umask(0)
    os.umask(mask)
    for name in ("plan.toml", "order.toml"):
        assert (out / name).stat().st_mode & 0o777 == 0o666 & ~mask
    assert not list(out.glob(".*.tmp")), "no temporary file left behind"


def test_every_command_is_documented_and_has_help(capsys: pytest.CaptureFixture[str]) -> None:
    from planner.cli.main import COMMANDS, plan_parser

    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text()
    epilog = plan_parser().epilog or ""
    for name in COMMANDS:
        assert f"campaign-planner {name}" in readme, name
        assert name in epilog, name
        argv = [name, "scan", "--help"] if name == "corpus" else [name, "--help"]
        with pytest.raises(SystemExit) as info:
            main(argv)
        assert info.value.code == 0, name
        assert "usage:" in capsys.readouterr().out, name


def test_check_report_lines_up_on_long_keys() -> None:
    from planner.measure.stack import Report, render

    r = Report()
    r.add("ok", "torch", "2.13.0 (CUDA 12.6)")
    r.add("fail", "rtx6000ada-custom (sm_89)", "the order's CUDA 11.0 cannot target sm_89")
    lines = render(r).splitlines()[:2]
    assert lines[0].index("2.13.0") == lines[1].index("the order's")


def test_cards_prints_one_precision_per_column(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["cards"]) == 0
    rows = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    bf16 = [row[4] for row in rows]
    assert all(len(x.split(".")[1]) == 1 for x in bf16), bf16  # 154.8, 362.1, 312.0
    assert "312.0" in bf16 and "362.05" not in bf16


def test_schema_describes_every_field(capsys: pytest.CaptureFixture[str]) -> None:
    # Descriptions come from the field docstrings, read only when the schema is printed.
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    models = [schema, *schema["$defs"].values()]
    undescribed = [f"{m.get('title')}.{name}" for m in models
                   for name, prop in m.get("properties", {}).items() if not prop.get("description")]
    assert undescribed == []
    figure = schema["$defs"]["Figure"]["properties"]["source"]["description"]
    assert figure.startswith("`entered` by hand")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_an_output_that_cannot_be_written_is_one_line_and_exit_1() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "planner", "--preset", "ablation-7d"],
                              stdout=full, stderr=subprocess.PIPE, text=True, check=False)
    assert proc.returncode == 1
    assert proc.stderr == ("campaign-planner: error: cannot write the output: No space left "
                           "on device\n")

"""`sky` and `dstack`: the plan as a SkyPilot task and a dstack run configuration, loaded
and validated by the tools' own parsers (offline, no credentials), read back to the plan's
card, count, window and command; bad input is one line, exit 2, nothing written."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from planner.cli.main import main
from planner.run.prepare import load_plan
from planner.spec.catalog import load_catalog
from planner.spec.shipped import shipped

ROOT = Path(__file__).parents[1]
CHECK = ROOT / "tests" / "cloud_check.py"

PRESETS = ["ablation-3d", "ablation-7d", "ablation-30d", "adaptation-30d", "embedding-3d",
           "embedding-7d", "embedding-30d"]
CREATED = "2026-01-01T00:00:00+00:00"


def _plan(tmp_path: Path, preset: str, *extra: str) -> Path:
    out = tmp_path / preset
    assert main(["--preset", preset, "--out", str(out), "--solver", "fast",
                 "--created", CREATED, *extra]) == 0
    return out


@pytest.fixture(scope="module")
def cloud_python() -> str:
    """The interpreter that has SkyPilot and dstack (`.venv-cloud`, which .ci/run makes);
    CI never skips these checks."""
    found = os.environ.get("CAMPAIGN_CLOUD_PYTHON") or str(ROOT / ".venv-cloud/bin/python")
    if not Path(found).exists():
        if os.environ.get("CI"):
            pytest.fail(f"no SkyPilot/dstack environment at {found}")
        pytest.skip("SkyPilot and dstack are not installed (.venv-cloud; see .ci/run)")
    return found


def _read(python: str, tool: str, *files: Path) -> dict[str, Any]:
    """What the tool's own parser reads in each file."""
    done = subprocess.run([python, str(CHECK), tool, *map(str, files)], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout)


def _window_seconds(script: str) -> int:
    return int(re.search(r"\$\(date \+%s\) \+ (\d+)", script)[1])  # type: ignore[index]


def _run_line(script: str) -> list[str]:
    line = next(x for x in script.splitlines() if "campaign-planner run" in x)
    words = shlex.split(line.split(" || ")[0])
    return words[words.index("campaign-planner"):]


def _by_sky_name(name: str) -> set[str]:
    return {k for k, c in load_catalog().cards.items() if c.sky_name == name}


def test_every_shipped_preset_round_trips(tmp_path, capsys, cloud_python):
    folders = [_plan(tmp_path, preset) for preset in PRESETS]
    for folder in folders:
        assert main(["sky", str(folder)]) == 0
        assert main(["dstack", str(folder)]) == 0
    tasks = _read(cloud_python, "sky", *(f / "sky.yaml" for f in folders))
    configs = _read(cloud_python, "dstack", *(f / ".dstack.yml" for f in folders))
    for folder in folders:
        c = load_plan(str(folder))[0].campaign
        task = tasks[str(folder / "sky.yaml")]
        ((name, count),) = task["accelerators"].items()
        assert c.card in _by_sky_name(name) and count == c.cards
        assert task["name"] == c.id and task["envs"]["CAMPAIGN_ID"] == c.id
        assert task["workdir"] == str(folder) and "/campaign" in task["mounts"]
        assert _window_seconds(task["run"]) == round(c.window_hours * 3600)
        cards = ",".join(str(i) for i in range(c.cards))
        assert _run_line(task["run"]) == ["campaign-planner", "run", "plan.toml", "--workdir",
                                          "/campaign", "--cards", cards]
        assert task["disk_size"] >= 100 and not task["use_spot"]

        config = configs[str(folder / ".dstack.yml")]
        card = load_catalog().cards[c.card]
        assert config["gpu_names"] == [card.dstack_name]
        assert config["count"] == [c.cards, c.cards] and config["memory_gb"] == card.memory_gib
        assert c.window_hours * 3600 <= config["max_duration"] <= c.window_hours * 3600 + 1800
        assert _window_seconds(config["commands"][-1]) == round(c.window_hours * 3600)
        assert _run_line(config["commands"][-1]) == _run_line(task["run"])
        assert config["env"]["CAMPAIGN_ID"] == c.id
        assert config["max_price"] is None  # no price known: none is made up


def test_eight_cards_thirty_days_with_a_price(tmp_path, capsys, cloud_python):
    prices = tmp_path / "prices.toml"
    prices.write_text("[cards.a6000]\nprice_per_card_hour = 0.49\n")
    folder = _plan(tmp_path, "ablation-7d", "--cards", "8", "--days", "30", "--catalog",
                   str(prices))
    assert main(["sky", str(folder), "--spot", "--bucket", "my-runs", "--store", "s3"]) == 0
    assert main(["dstack", str(folder), "--spot", "--catalog", str(prices)]) == 0
    task = _read(cloud_python, "sky", folder / "sky.yaml")[str(folder / "sky.yaml")]
    assert task["accelerators"] == {"A6000": 8} and task["use_spot"]
    assert _window_seconds(task["run"]) == 30 * 24 * 3600
    assert "--cards 0,1,2,3,4,5,6,7" in task["run"]
    assert task["mounts"] == {"/campaign": "my-runs"}
    config = _read(cloud_python, "dstack", folder / ".dstack.yml")[str(folder / ".dstack.yml")]
    assert config["count"] == [8, 8] and config["spot_policy"] == "spot"
    assert config["max_price"] == pytest.approx(0.49 * 8)


def test_per_run_jobs_cover_every_run_once(tmp_path, capsys, cloud_python):
    folder = _plan(tmp_path, "ablation-3d")
    plan, _ = load_plan(str(folder))
    assert main(["sky", str(folder), "--per-run"]) == 0
    assert "locks on object-storage mounts are not reliable" in capsys.readouterr().out
    seen: list[str] = []
    for task in _read(cloud_python, "sky", *(folder / "sky-jobs").iterdir()).values():
        words = _run_line(task["run"])
        ids = words[words.index("--only") + 1].split(",")
        seen += ids
        need = max(len(r.card) for r in plan.runs if r.id in ids)
        assert list(task["accelerators"].values()) == [need]
        assert "/campaign/checkpoints" in task["run"]
    assert sorted(seen) == sorted(r.id for r in plan.runs)


def test_run_only_restricts_the_plan(tmp_path, capsys):
    folder = _plan(tmp_path, "ablation-3d")
    plan, _ = load_plan(str(folder))
    first = plan.runs[0].id
    assert main(["run", str(folder), "--only", first, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"{plan.campaign.id}, 1 runs" in out and first in out
    assert main(["run", str(folder), "--only", "nope", "--dry-run"]) == 2
    assert "--only: no run 'nope'" in capsys.readouterr().err


def _one_line_error(capsys, *needles: str) -> None:
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("campaign-planner: error:")
    for n in needles:
        assert n in err


def test_a_card_no_launcher_names_is_one_line(tmp_path, capsys):
    mine = tmp_path / "mine.toml"
    text = (Path(__file__).parents[1] / "presets" / "cards.toml").read_text()
    block = text[text.index("[cards.a6000]"):text.index("[cards.a40]")]
    block = re.sub(r'(?m)^(sky_name|dstack_name) = .*\n', "", block)
    mine.write_text(block.replace("[cards.a6000]", "[cards.mycard]"))
    folder = _plan(tmp_path, "ablation-3d", "--catalog", str(mine), "--card", "mycard")
    before = sorted(p.name for p in folder.iterdir())
    for tool in ("sky", "dstack"):
        assert main([tool, str(folder), "--catalog", str(mine)]) == 2
        _one_line_error(capsys, f"cards.mycard.{tool}_name")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_bad_input_writes_nothing(tmp_path, capsys):
    folder = _plan(tmp_path, "ablation-3d")
    assert main(["sky", str(folder)]) == 0
    first = (folder / "sky.yaml").read_text()
    assert main(["sky", str(folder), "--spot"]) == 2  # exists, no --force
    _one_line_error(capsys, "sky.yaml", "--force")
    assert (folder / "sky.yaml").read_text() == first
    assert main(["sky", str(folder), "--spot", "--force"]) == 0
    assert "use_spot: true" in (folder / "sky.yaml").read_text()
    for args, needle in ((["--bucket", "Bad_Name"], "--bucket"),
                         (["--disk-gb", "0"], "--disk-gb"),
                         (["--install", "a\nb"], "--install")):
        assert main(["dstack" if "--bucket" not in args else "sky", str(folder), *args]) == 2
        _one_line_error(capsys, needle)
    assert main(["dstack", str(folder), "--max-price", "nan"]) == 2
    _one_line_error(capsys, "--max-price")
    assert not (folder / ".dstack.yml").exists()


def test_the_order_must_be_the_plans(tmp_path, capsys):
    folder = _plan(tmp_path, "ablation-3d")
    order = folder / "order.toml"
    order.write_text(order.read_text().replace("plan_id = ", 'plan_id = "other-000000"\n#'))
    assert main(["sky", str(folder)]) == 2
    _one_line_error(capsys, "order.toml", "order.plan_id")
    order.unlink()
    assert main(["dstack", str(folder)]) == 2
    _one_line_error(capsys, "order.toml", "file not found")
    assert not (folder / ".dstack.yml").exists() and not (folder / "sky.yaml").exists()


def test_package_names_never_run_as_code(tmp_path, capsys, cloud_python):
    folder = _plan(tmp_path, "ablation-3d")
    order = folder / "order.toml"
    text = order.read_text()
    order.write_text(re.sub(r"packages = \[[^\]]*\]", 'packages = ["x; touch pwned", "$(id)"]',
                            text))
    assert main(["sky", str(folder)]) == 0
    task = _read(cloud_python, "sky", folder / "sky.yaml")[str(folder / "sky.yaml")]
    line = next(x for x in task["setup"].splitlines() if "touch" in x)
    assert shlex.split(line)[-2:] == ["x; touch pwned", "$(id)"]


def test_advise_names_the_cheapest_offer_in_the_launchers_terms(tmp_path, capsys):
    prices = tmp_path / "prices.toml"
    prices.write_text("[cards.a6000]\nprice_per_card_hour = 0.49\n"
                      "[cards.l40s]\nprice_per_card_hour = 0.86\n")
    args = ["advise", "--cards", "a6000,l40s", "--counts", "4", "--windows", "7"]
    assert main([*args, "--catalog", str(prices)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert ("Cheapest offer known: a6000 × 4, 7 days at 0.49 USD/card-hour; SkyPilot A6000:4, "
            "dstack A6000:48GB:4 (max_price 1.96)") in out
    assert main(args) == 0
    assert "Cheapest offer" not in capsys.readouterr().out


def test_a_package_that_is_an_option_is_refused(tmp_path, capsys):
    folder = _plan(tmp_path, "ablation-3d")
    order = folder / "order.toml"
    order.write_text(re.sub(r"packages = \[[^\]]*\]",
                            'packages = ["ok", "--index-url=http://elsewhere/simple"]',
                            order.read_text()))
    for tool in ("sky", "dstack"):
        assert main([tool, str(folder)]) == 2
        _one_line_error(capsys, "order.toml", "order.environment.packages[1]")
    assert not (folder / ".dstack.yml").exists() and not (folder / "sky.yaml").exists()


def test_a_failed_setup_stops_dstacks_run(tmp_path, capsys):
    """dstack joins its commands with `&&`: a setup line that fails (pip, a failed check)
    never lets the plan run."""
    folder = _plan(tmp_path, "ablation-3d")
    assert main(["dstack", str(folder)]) == 0
    config = yaml.safe_load((folder / ".dstack.yml").read_text())
    script = " && ".join(c.strip() for c in config["commands"])  # as dstack joins them
    stubs = tmp_path / "bin"
    stubs.mkdir()
    ran = tmp_path / "ran"
    (stubs / "python3").write_text("#!/bin/sh\nexit 1\n")  # pip fails
    (stubs / "campaign-planner").write_text(f"#!/bin/sh\necho \"$@\" >> {shlex.quote(str(ran))}\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"})
    assert done.returncode != 0
    assert not ran.exists()  # neither the check nor the run


def test_the_window_starts_before_the_setup(tmp_path, capsys):
    """The window is the rental's: noted before the setup (a long pip install eats into it,
    as into the plan's first hour), so dstack's max_duration never ends the run before
    `run` stops gracefully. Both files' scripts run here with stand-in commands."""
    folder = _plan(tmp_path, "ablation-3d")
    assert main(["sky", str(folder)]) == 0 and main(["dstack", str(folder)]) == 0
    task = yaml.safe_load((folder / "sky.yaml").read_text())
    config = yaml.safe_load((folder / ".dstack.yml").read_text())
    mount, stubs = tmp_path / "campaign", tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "log"
    # pip fails unless the window's end is already noted.
    (stubs / "python3").write_text(f"#!/bin/sh\n[ -s {mount}/.window-end ]\n")
    (stubs / "campaign-planner").write_text(f"#!/bin/sh\necho \"$@\" >> {log}\n")
    for stub in stubs.iterdir():
        stub.chmod(0o755)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}"}
    for scripts in ([task["setup"], task["run"]], config["commands"]):
        log.unlink(missing_ok=True)
        for script in scripts:
            done = subprocess.run(["bash", "-c", script.replace("/campaign", str(mount))],
                                  capture_output=True, text=True, timeout=300, env=env)
            assert done.returncode == 0, done.stderr
        assert log.read_text().splitlines()[-1].startswith("run plan.toml --workdir")
        (mount / ".window-end").unlink()


def test_checkpoints_off_the_bucket_are_refused(tmp_path, capsys):
    """An absolute checkpoint root lies on the machine's own disk: a recovered job could not
    resume from it, nor see a run's done record."""
    preset = tmp_path / "p.toml"
    preset.write_text(shipped("ablation-3d.toml").read_text().replace(
        "[ablation]\n", "[ablation]\ncheckpoint_root = \"/data/ckpt\"\n", 1))
    folder = tmp_path / "plan"
    assert main(["--preset", str(preset), "--out", str(folder), "--solver", "fast"]) == 0
    capsys.readouterr()
    before = sorted(p.name for p in folder.iterdir())
    for args in (["sky"], ["sky", "--per-run"], ["dstack"]):
        assert main([args[0], str(folder), *args[1:]]) == 2
        _one_line_error(capsys, "plan.toml", "runs[0].checkpoint_dir", "relative")
    assert sorted(p.name for p in folder.iterdir()) == before


def test_per_run_jobs_never_go_through_a_link(tmp_path, capsys):
    folder = _plan(tmp_path, "ablation-3d")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (folder / "sky-jobs").symlink_to(elsewhere)
    assert main(["sky", str(folder), "--per-run"]) == 2
    _one_line_error(capsys, "sky-jobs", "link")
    assert list(elsewhere.iterdir()) == []


@pytest.mark.parametrize("name", ["My_Camp.v2",
                                  "a-campaign-whose-name-is-far-longer-than-dstack-allows"])
def test_names_follow_the_launchers_rules_whatever_the_campaigns(tmp_path, capsys, name):
    preset = tmp_path / "p.toml"
    text = shipped("ablation-3d.toml").read_text()
    preset.write_text(re.sub(r'(?m)^name = "[^"]*"', f'name = "{name}"', text, count=1))
    folder = tmp_path / "plan"
    assert main(["--preset", str(preset), "--out", str(folder), "--solver", "fast"]) == 0
    assert main(["sky", str(folder)]) == 0 and main(["dstack", str(folder)]) == 0
    task = yaml.safe_load((folder / "sky.yaml").read_text())
    config = yaml.safe_load((folder / ".dstack.yml").read_text())
    plan_id = load_plan(str(folder))[0].campaign.id
    bucket = task["file_mounts"]["/campaign"]["name"]
    assert re.fullmatch(r"[a-z0-9][a-z0-9-]{1,61}[a-z0-9]", bucket)
    for dstack_name in (config["name"], config["volumes"][0]["name"]):  # dstack's own rule
        assert re.fullmatch(r"[a-z][a-z0-9-]{1,40}", dstack_name)
        assert dstack_name.endswith(plan_id[-6:])
    assert config["env"] == [f"CAMPAIGN_ID={plan_id}"]
    assert main(["dstack", str(folder), "--force", "--volume", "v" * 42]) == 2
    _one_line_error(capsys, "--volume", "dstack")


def test_a_plan_folder_with_a_colon_is_copied_whole(tmp_path, capsys, cloud_python):
    folder = _plan(tmp_path / "runs:2026", "ablation-3d")
    assert main(["dstack", str(folder)]) == 0
    config = _read(cloud_python, "dstack", folder / ".dstack.yml")[str(folder / ".dstack.yml")]
    assert config["files"] == [[str(folder), "/workflow/plan"]]


def test_a_folder_where_the_file_goes_is_one_line(tmp_path, capsys):
    folder = _plan(tmp_path, "ablation-3d")
    (folder / ".dstack.yml").mkdir()
    assert main(["dstack", str(folder), "--force"]) == 2
    _one_line_error(capsys, ".dstack.yml", "is a folder")
    assert list((folder / ".dstack.yml").iterdir()) == []

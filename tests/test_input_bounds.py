"""Hand-written bad inputs that once ended in a traceback (or wrote files): each is now one
line naming file and field, exit 2, nothing written."""

from __future__ import annotations

import copy
import tomllib
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from tests.fuzz_support import cli
from tests.run_fixtures import harness as h


def _shipped(name: str) -> dict[str, Any]:
    text = resources.files("presets").joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return tomllib.loads(text)


def _window(hours: float) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        d["campaign"].pop("window_days", None)
        d["campaign"]["window_hours"] = hours
    return change


def _set(*path: Any, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(d: dict[str, Any]) -> None:
        for key in path[:-1]:
            d = d.setdefault(key, {}) if isinstance(d, dict) else d[key]
        d[path[-1]] = value
    return change


CASES = [
    ("ablation-3d", _window(float("inf")), "campaign.window_hours"),
    ("ablation-3d", _window(1e308), "campaign.window_hours"),
    ("ablation-3d", _window(3e10), "campaign.window_hours"),
    ("ablation-3d", _set("order", "cuda", value="1" * 5000 + ".0"), "order.cuda"),
    ("embedding-3d", _set("overheads", "startup_minutes", value=float("inf")),
     "overheads.startup_minutes"),
    ("embedding-3d", _set("overheads", "startup_minutes", value=1e300),
     "overheads.startup_minutes"),
    ("embedding-3d", _set("embedding", "versions", value=1_000_000), "embedding.versions"),
    ("ablation-3d", _set("ablation", "variants", 0, "name", value="v" * 300),
     "ablation.variants[0].name"),
    ("ablation-3d", _set("ablation", "checkpoint_root", value="../../outside"),
     "ablation.checkpoint_root"),
    ("ablation-3d", _set("ablation", "export_root", value="a/../../b"),
     "ablation.export_root"),
    ("ablation-3d", _set("ablation", "baseline", "step_time_s", "value", value=float("nan")),
     "ablation.baseline.step_time_s.value"),
    ("ablation-3d", _set("ablation", "seeds", value=[2**64]), "ablation.seeds[0]"),
]


@pytest.mark.parametrize(("preset", "change", "field"), CASES,
                         ids=[f"{c[2]}-{i}" for i, c in enumerate(CASES)])
def test_bad_numbers_and_names_are_one_line(tmp_path: Path, preset: str,
                                            change: Callable[[dict[str, Any]], None],
                                            field: str) -> None:
    data = copy.deepcopy(_shipped(preset))
    change(data)
    src = tmp_path / "p.toml"
    src.write_text(tomli_w.dumps(data))
    rc, _, err = cli(["--preset", str(src), "--out", str(tmp_path / "out")])
    assert rc == 2 and f"{src}: {field}:" in err
    assert not (tmp_path / "out").exists()


def test_a_run_id_too_long_for_its_files_is_refused_at_plan_time(tmp_path: Path) -> None:
    data = h.preset(seeds=(2**62,), variants={"v" * 64: {"lr": "0.3"}})
    data["campaign"]["name"] = "c" * 64
    data["ablation"]["robustness"][0]["name"] = "r" * 64
    data["ablation"]["robustness"][0]["applies_to"] = ["v" * 64]
    src = tmp_path / "p.toml"
    src.write_text(tomli_w.dumps(data))
    rc, _, err = cli(["--preset", str(src), "--out", str(tmp_path / "out")])
    assert rc == 2 and "at most 200" in err and ": campaign.name: " in err  # the longest
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(("field", "value"), [
    ("id", "../../../outside/evil"), ("checkpoint_dir", "../../outside"),
    ("export_name", "/tmp/x/../../etc"), ("resume", "a/../../b"), ("depends_on", "../x"),
    ("id", "x" * 300), ("start_h", float("inf")), ("card", [-1])])
@pytest.mark.parametrize("command", [["status"], ["run", "--dry-run"], ["run"], ["slurm"]])
def test_an_edited_plan_is_checked_again_on_reading(tmp_path: Path, field: str, value: Any,
                                                    command: list[str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    h.edit_plan(plan_path, 0, **{field: value})
    before = h.tree(tmp_path)
    extra = ["--out", str(tmp_path / "slurm")] if command == ["slurm"] else []
    rc, _, err = cli([command[0], str(plan_path), *command[1:], *extra])
    assert rc == 2 and f"runs[0].{field}" in err
    assert h.tree(tmp_path) == before

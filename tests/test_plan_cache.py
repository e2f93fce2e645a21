"""The cache of checked plans: the same bytes read back give the same plan as a full read;
other bytes are read and checked in full; an entry anyone else could have written is not
used."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.errors import InputError
from planner.planfile.export import read_plan
from planner.planning import plan_cache
from tests.run_fixtures import harness as h


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    where = tmp_path / "cache"
    monkeypatch.setenv("CAMPAIGN_PLANNER_CACHE", str(where))
    return where


def _entry(cache: Path, plan_path: Path) -> Path:
    return cache / f"{plan_cache.key(plan_path.read_bytes())}{plan_cache.SUFFIX}"


def test_a_planned_plan_is_read_back_from_the_cache_as_a_full_read_gives_it(
        tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0, 1)))
    entry = _entry(cache, plan_path)
    assert entry.exists() and entry.stat().st_mode & 0o777 == 0o600
    assert cache.stat().st_mode & 0o777 == 0o700
    cached = read_plan(plan_path)
    monkeypatch.setenv("CAMPAIGN_PLANNER_CACHE", "off")
    assert read_plan(plan_path) == cached


def test_an_edited_plan_is_read_in_full_and_refused(tmp_path: Path, cache: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    text = plan_path.read_text()
    plan_path.write_text(text.replace('[campaign]\nid = "', '[campaign]\nid = "x\\n', 1))
    assert main(["status", str(plan_path)]) == 2
    assert "campaign.id" in capsys.readouterr().err


@pytest.mark.parametrize("how", ["folder-open", "entry-open", "entry-link"])
def test_an_entry_others_could_have_written_is_not_used(tmp_path: Path, cache: Path,
                                                        how: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    entry = _entry(cache, plan_path)
    forged = marshal.loads(entry.read_bytes())
    row = forged["runs"][0]
    row["argv"] = ["sh", "-c", "touch MARKER"]
    row["command"] = "sh -c 'touch MARKER'"
    if how == "entry-link":
        other = tmp_path / "forged.plan"
        other.write_bytes(marshal.dumps(forged))
        other.chmod(0o600)
        entry.unlink()
        entry.symlink_to(other)
    else:
        entry.write_bytes(marshal.dumps(forged))
        if how == "folder-open":
            cache.chmod(0o777)
        else:
            entry.chmod(0o644)
    assert read_plan(plan_path).runs[0].argv[1:3] != ["-c", "touch MARKER"]


def test_a_cache_that_cannot_be_written_does_not_fail_the_command(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    monkeypatch.setenv("CAMPAIGN_PLANNER_CACHE", str(blocker / "cache"))
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    assert read_plan(plan_path).runs


def test_the_cache_keeps_a_few_plans(tmp_path: Path, cache: Path) -> None:
    for seed in range(plan_cache.ENTRIES + 2):
        h.make_plan(tmp_path / f"p{seed}", h.preset(seeds=(seed,)))
    assert len(list(cache.glob(f"*{plan_cache.SUFFIX}"))) == plan_cache.ENTRIES
    assert not list(cache.glob(".tmp-*"))


def test_a_missing_plan_is_still_one_line(tmp_path: Path, cache: Path) -> None:
    with pytest.raises(InputError, match="file not found"):
        read_plan(tmp_path / "nowhere.toml")
    assert not os.path.exists(cache) or not list(cache.iterdir())


@pytest.mark.parametrize("edit", ["a field left out", "a field too many", "a run not a table"])
def test_an_entry_of_other_fields_is_not_used(tmp_path: Path, cache: Path, edit: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    full = read_plan(plan_path)
    entry = _entry(cache, plan_path)
    data = marshal.loads(entry.read_bytes())
    if edit == "a field left out":
        del data["runs"][0]["argv"]
    elif edit == "a field too many":
        data["runs"][0]["extra"] = 1
    else:
        data["runs"][0] = ["x"]
    entry.write_bytes(marshal.dumps(data))
    assert plan_cache.load(plan_path.read_bytes()) is None
    assert read_plan(plan_path) == full


@pytest.mark.parametrize("damage", ["cut short", "not a table", "runs not a list"])
def test_a_damaged_entry_is_not_used(tmp_path: Path, cache: Path, damage: str) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,)))
    full = read_plan(plan_path)
    entry = _entry(cache, plan_path)
    raw = entry.read_bytes()
    entry.write_bytes(raw[:len(raw) // 2] if damage == "cut short" else marshal.dumps(
        [1, 2] if damage == "not a table" else {"plan": {}, "runs": {"a": 1}}))
    assert plan_cache.load(plan_path.read_bytes()) is None
    assert read_plan(plan_path) == full


def test_only_entries_are_given_up_when_the_cache_is_full(tmp_path: Path,
                                                          cache: Path) -> None:
    cache.mkdir(mode=0o700)
    keep = [cache / "notes.json", cache / "README", cache / f"{'0' * 63}x.plan"]
    for path in keep:
        path.write_text("mine")
    for seed in range(plan_cache.ENTRIES + 1):
        h.make_plan(tmp_path / f"p{seed}", h.preset(seeds=(seed,)))
    assert all(path.read_text() == "mine" for path in keep)

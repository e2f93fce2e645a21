"""Golden files: the exports of the default preset, byte for byte.

Regenerate after a deliberate change with `UPDATE_GOLDEN=1 pytest tests/test_golden.py`,
then read the diff before committing it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner.cli.main import main

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("preset", ["ablation-7d", "ablation-30d", "embedding-7d"])
def test_exports_match_golden(tmp_path: Path, preset: str) -> None:
    args = ["--preset", preset, "--created", "2026-01-01T00:00:00+00:00", "--out",
            str(tmp_path), "--contact-name", "Ada Lovelace", "--contact-email",
            "ada@example.org"]
    assert main(args) == 0
    for name in ("plan.toml", "runs.jsonl", "order.toml"):
        got = (tmp_path / name).read_text(encoding="utf-8")
        golden = GOLDEN / preset / name
        if os.environ.get("UPDATE_GOLDEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(got, encoding="utf-8")
        assert got == golden.read_text(encoding="utf-8"), f"{preset}/{name} changed"


@pytest.mark.parametrize("preset", ["ablation-30d", "embedding-30d", "adaptation-30d"])
def test_plan_toml_reads_back_to_the_same_plan(tmp_path: Path, preset: str) -> None:
    from planner.campaign import plan_campaign
    from planner.planfile.export import plan_files, read_plan
    from planner.spec.catalog import load_catalog
    from planner.spec.loading import load_preset

    p, _ = load_preset(preset)
    plan = plan_campaign(p, load_catalog())
    for path, text in plan_files(plan, tmp_path):
        path.write_text(text, encoding="utf-8")
    assert read_plan(tmp_path / "plan.toml") == plan


def test_read_plan_names_file_and_field(tmp_path: Path) -> None:
    from planner.errors import InputError
    from planner.planfile.export import read_plan

    path = tmp_path / "plan.toml"
    path.write_text("[campaign]\nid = 3\n")
    with pytest.raises(InputError) as info:
        read_plan(path)
    assert info.value.file == str(path) and info.value.field.startswith("campaign")

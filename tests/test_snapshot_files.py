"""Every stored TUI snapshot belongs to a test that compares against it.

syrupy fails a run in one process on a snapshot no test used, but skips that check under
pytest-xdist (the suite's default, see pyproject.toml), so the check is made here."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).parent
SNAPSHOTS = TESTS / "__snapshots__"


def _snapshot_tests(module: Path) -> set[str]:
    """The names of the module's test functions that take the `snap_compare` fixture."""
    tree = ast.parse(module.read_text(encoding="utf-8"))
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            and node.name.startswith("test_")
            and "snap_compare" in {a.arg for a in node.args.args}}


def test_every_stored_snapshot_has_its_test() -> None:
    folders = sorted(p for p in SNAPSHOTS.iterdir() if p.is_dir())
    assert folders, "no stored snapshots found"
    for folder in folders:
        module = TESTS / f"{folder.name}.py"
        assert module.is_file(), f"{folder}: no test module {module.name}"
        stored = {p.stem for p in folder.iterdir() if p.suffix == ".svg"}
        assert stored, f"{folder}: no snapshots"
        orphans = stored - _snapshot_tests(module)
        assert not orphans, f"{folder}: snapshots no test compares against: {sorted(orphans)}"


def test_only_tests_taking_snap_compare_count(tmp_path: Path) -> None:
    module = tmp_path / "test_screens.py"
    module.write_text("def test_kept(snap_compare):\n    pass\n\n"
                      "async def test_async(snap_compare, tmp_path):\n    pass\n\n"
                      "def test_plain():\n    pass\n")
    assert _snapshot_tests(module) == {"test_kept", "test_async"}

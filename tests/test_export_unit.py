"""plan.toml, order.toml (and a corpus's shard list) are replaced as a unit: a full disk or
a failed rename leaves the old set whole, a folder made for a failed export is removed,
and every bad --out is one line naming it, exit 2, nothing written."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from planner.cli.main import main
from planner.planfile import replace
from tests.run_fixtures import harness as h


def _plan(capsys: pytest.CaptureFixture[str], preset: Path, out: Path, *more: str) -> int:
    rc = main(["--preset", str(preset), "--out", str(out), *more])
    capsys.readouterr()
    return rc


@pytest.fixture
def preset(tmp_path: Path) -> Path:
    import tomli_w

    src = tmp_path / "preset.toml"
    src.write_text(tomli_w.dumps(h.preset()))
    return src


def _full_disk_on(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    real = replace.stage_text

    def stage(target: Path, text: str, **how: bool) -> Path:
        if target.name == name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(target))
        return real(target, text, **how)

    monkeypatch.setattr(replace, "stage_text", stage)


def test_a_full_disk_leaves_the_old_pair_whole(tmp_path: Path, preset: Path,
                                               monkeypatch: pytest.MonkeyPatch,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert _plan(capsys, preset, out, "--created", "2026-01-01T00:00:00") == 0
    before = h.tree(out), {p.name: p.read_bytes() for p in out.iterdir()}
    _full_disk_on("order.toml", monkeypatch)
    rc = main(["--preset", str(preset), "--out", str(out), "--force",
               "--created", "2026-02-02T00:00:00"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"{out / 'order.toml'}: --out: cannot write: No space left on device" in err
    assert (h.tree(out), {p.name: p.read_bytes() for p in out.iterdir()}) == before


def test_a_failed_export_removes_the_folders_it_made(tmp_path: Path, preset: Path,
                                                     monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    _full_disk_on("plan.toml", monkeypatch)
    assert _plan(capsys, preset, tmp_path / "new" / "deeper") == 2
    assert sorted(p.name for p in tmp_path.iterdir()) == ["preset.toml"]


def test_a_failed_rename_puts_the_old_files_back(tmp_path: Path, preset: Path,
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert _plan(capsys, preset, out, "--created", "2026-01-01T00:00:00") == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    real = os.replace

    def flaky(src: str | Path, dst: str | Path) -> None:
        if Path(dst).name == "order.toml":
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        real(src, dst)

    monkeypatch.setattr(replace.os, "replace", flaky)
    assert _plan(capsys, preset, out, "--force", "--created", "2026-02-02T00:00:00") == 2
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


@pytest.mark.parametrize("case", ["under a file", "dangling symlink", "300-char name",
                                  "plan.toml is a folder", "cannot be created"])
def test_a_bad_out_is_one_line_and_writes_nothing(tmp_path: Path, preset: Path, case: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "file").write_text("x")
    (tmp_path / "link").symlink_to(tmp_path / "nowhere")
    (tmp_path / "folder" / "plan.toml").mkdir(parents=True)
    out = {"under a file": tmp_path / "file" / "sub", "dangling symlink": tmp_path / "link",
           "300-char name": tmp_path / ("x" * 300),
           "plan.toml is a folder": tmp_path / "folder",
           "cannot be created": Path("/proc/campaign-planner-test")}[case]
    before = _tree(tmp_path)
    rc = main(["--preset", str(preset), "--out", str(out), "--force"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1 and "--out" in err and "Traceback" not in err
    assert _tree(tmp_path) == before


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {str(p): (p.lstat().st_size, p.lstat().st_mtime_ns) for p in folder.rglob("*")}


@pytest.mark.parametrize("syncfs", [True, False])
def test_many_files_replace_together_with_or_without_syncfs(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, syncfs: bool) -> None:
    if not syncfs:
        monkeypatch.setattr(replace, "_syncfs", lambda: None)
    out = tmp_path / "out"
    files = [(out / "m" / f"{i}.toml", f"n = {i}\n") for i in range(replace.SYNCFS_FROM + 5)]
    replace.replace_together(out, files, force=False)
    assert [p.read_text() for p, _ in files] == [t for _, t in files]
    assert not [p for p in out.rglob("*") if p.name.startswith(".")], "no staged file left"

"""The embed worker's export folder writes nothing through a link: shard locks, the
manifest's lock, the manifest, shard files and their temporaries."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from planner.embed.formats import Vectors
from planner.embed.manifest import ExportDir, shard_file
from planner.nofollow import LinkRefused


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    return victim


@pytest.mark.parametrize("name", ["shard-00000", "manifest"])
def test_a_linked_lock_is_refused(tmp_path: Path, name: str) -> None:
    victim = _victim(tmp_path)
    folder = ExportDir(tmp_path / "v1")
    (tmp_path / "v1" / ".locks").mkdir(parents=True)
    (tmp_path / "v1" / ".locks" / name).symlink_to(victim)
    with pytest.raises(LinkRefused, match="symbolic link"):
        if name == "manifest":
            with folder._locked():  # what every manifest update takes first
                pass
        else:
            folder.claim(0)
    assert victim.read_text() == "precious\n"


def test_a_linked_locks_folder_or_export_folder_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / ".locks").symlink_to(elsewhere)
    with pytest.raises(LinkRefused):
        ExportDir(tmp_path / "v1").claim(0)
    (tmp_path / "v2").symlink_to(elsewhere)
    with pytest.raises(LinkRefused):
        ExportDir(tmp_path / "v2").claim(0)
    assert not any(elsewhere.iterdir())


def test_a_linked_manifest_is_refused(tmp_path: Path) -> None:
    victim = _victim(tmp_path)
    (tmp_path / "v1").mkdir()
    (tmp_path / "v1" / "manifest.toml").symlink_to(victim)
    with pytest.raises(LinkRefused):
        ExportDir(tmp_path / "v1").read()


def test_shard_files_replace_a_link_and_never_write_through_one(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    victim = _victim(tmp_path)
    folder = tmp_path / "v1"
    folder.mkdir()
    final = folder / shard_file(0)
    final.symlink_to(victim)
    (folder / f".{final.name}.{os.getpid()}.tmp").symlink_to(victim)
    path = ExportDir(folder).write_shard(0, Vectors(["a"], np.zeros((1, 2), dtype=np.float32)))
    assert not path.is_symlink() and victim.read_text() == "precious\n"
    assert list(np.load(path)["ids"]) == ["a"]


def test_the_merged_file_replaces_a_link_and_never_writes_through_one(tmp_path: Path) -> None:
    np = pytest.importorskip("numpy")
    from planner.embed.merge import _write

    victim = _victim(tmp_path)
    final = tmp_path / "merged.npz"
    final.symlink_to(victim)
    (tmp_path / f".{final.name}.{os.getpid()}.tmp").symlink_to(victim)
    path = _write(final, Vectors(["a"], np.zeros((1, 2), dtype=np.float32)), "npz", "float32")
    assert not path.is_symlink() and victim.read_text() == "precious\n"
    assert list(np.load(path)["ids"]) == ["a"]

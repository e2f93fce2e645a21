"""The headless plan's process settings: pydantic's plugin loader stood in for only while
plugins are off, and handed back the moment they are not."""

from __future__ import annotations

import gc
import importlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

from planner.cli import lean

HEADLESS = """
import gc, os, sys
sys.argv = ["campaign-planner", *sys.argv[1:]]
from planner.cli import console
rc = console()
print(rc, "importlib.metadata" in sys.modules, os.environ.get("PYDANTIC_DISABLE_PLUGINS"),
      gc.get_threshold()[0] >= 100_000, file=sys.stderr)
"""


def _headless(tmp_path: Path, env: dict[str, str] | None = None) -> list[str]:
    proc = subprocess.run([sys.executable, "-c", HEADLESS, "--preset", "ablation-7d", "--out",
                           str(tmp_path / "o")], capture_output=True, text=True, check=True,
                          env=env)
    return proc.stderr.strip().splitlines()[-1].split()


def test_a_headless_plan_skips_the_plugin_search_and_its_imports(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != lean.PLUGINS}
    assert _headless(tmp_path, env) == ["0", "False", "__all__", "True"]
    assert (tmp_path / "o" / "plan.toml").is_file()


def test_a_plugin_named_by_the_user_keeps_pydantic_s_own_loader(tmp_path: Path) -> None:
    env = {**os.environ, lean.PLUGINS: "logfire"}
    # Plugins are not all off: pydantic's loader (and its import) is left as it is.
    assert _headless(tmp_path, env)[:3] == ["0", "True", "logfire"]


def test_the_stand_in_answers_no_plugins_while_they_are_off_then_hands_over(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import pydantic.plugin

    real = sys.modules.get(lean.LOADER)
    # Put back as found: the module pydantic imports, and the package's attribute to it.
    monkeypatch.setattr(pydantic.plugin, "_loader", getattr(pydantic.plugin, "_loader", None),
                        raising=False)
    monkeypatch.delitem(sys.modules, lean.LOADER, raising=False)
    monkeypatch.setenv(lean.PLUGINS, "__all__")
    lean._without_plugin_search()
    stand_in = sys.modules[lean.LOADER]
    assert stand_in is not real
    from pydantic.plugin._loader import get_plugins

    assert get_plugins is lean.get_plugins
    assert tuple(get_plugins()) == ()
    monkeypatch.delenv(lean.PLUGINS)
    # Plugins turned back on: pydantic's own loader is imported and answers from now on.
    assert list(lean.get_plugins()) == []
    assert sys.modules[lean.LOADER] is not stand_in
    assert sys.modules[lean.LOADER].get_plugins is not lean.get_plugins


def test_the_stand_in_is_not_put_over_a_loaded_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    importlib.import_module(lean.LOADER)
    real = sys.modules[lean.LOADER]
    monkeypatch.setenv(lean.PLUGINS, "__all__")
    lean._without_plugin_search()
    assert sys.modules[lean.LOADER] is real


def test_lean_process_keeps_a_higher_threshold_it_finds(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    registered: list[object] = []
    monkeypatch.setattr(lean.atexit, "register", registered.append)
    monkeypatch.setenv(lean.PLUGINS, "logfire")
    try:
        gc.set_threshold(lean.GC_THRESHOLD * 5, *before[1:])
        lean.lean_process()
        assert gc.get_threshold() == (lean.GC_THRESHOLD * 5, *before[1:])
        assert registered == [gc.freeze]
    finally:
        gc.set_threshold(*before)


END = """
import atexit, sys, types
from planner.cli import lean
atexit.register(print, " and the exit handler ran")
if sys.argv[1] == "command":
    # As `python -m planner` runs: the process is the command's own.
    sys.modules["__main__"].__spec__ = types.SimpleNamespace(name="planner.__main__")
print("planned", end="")  # still in stdout's buffer: flushed before the process ends
print(lean.end_process(3), "returned")
"""


def test_the_command_s_process_ends_after_its_exit_handlers_with_its_status() -> None:
    proc = subprocess.run([sys.executable, "-c", END, "command"], capture_output=True,
                          text=True)
    assert (proc.returncode, proc.stdout) == (3, "planned and the exit handler ran\n")


def test_a_program_calling_the_command_in_passing_exits_as_usual() -> None:
    proc = subprocess.run([sys.executable, "-c", END, "library"], capture_output=True,
                          text=True)
    assert (proc.returncode, proc.stdout) == (0, "planned3 returned\n and the exit handler ran\n")


def test_the_headless_command_skips_only_the_interpreter_s_teardown(tmp_path: Path) -> None:
    # `python -v` reports the teardown ("# cleanup[...]"): a headless plan's process has
    # none, and still writes both files, prints its summary and exits 0; other commands
    # end as usual.
    plan = subprocess.run([sys.executable, "-v", "-m", "planner", "--preset", "ablation-7d",
                           "--out", str(tmp_path / "o")], capture_output=True, text=True)
    assert plan.returncode == 0
    assert "Wrote " in plan.stdout and (tmp_path / "o" / "order.toml").is_file()
    assert "# cleanup[" not in plan.stderr
    listing = subprocess.run([sys.executable, "-v", "-m", "planner", "presets"],
                             capture_output=True, text=True)
    assert listing.returncode == 0 and "# cleanup[" in listing.stderr


KEEP = """
import sys, types, weakref
from planner.cli import lean
class Rows(list):
    pass
if sys.argv[1] == "command":
    sys.modules["__main__"].__spec__ = types.SimpleNamespace(name="planner.__main__")
lean.hold_to_exit()
rows = Rows([1, 2])
gone = weakref.ref(rows)
lean.keep(rows)
del rows
print("held" if gone() is not None else "freed")
"""


@pytest.mark.parametrize(("who", "outcome"), [("command", "held"), ("library", "freed")])
def test_what_the_command_keeps_is_held_only_in_its_own_process(who: str,
                                                                 outcome: str) -> None:
    proc = subprocess.run([sys.executable, "-c", KEEP, who], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip() == outcome


def test_nothing_is_kept_before_hold_to_exit() -> None:
    before = list(lean._kept)
    lean.keep(object())
    assert lean._kept == before


FREED = """
import ctypes, sys
from planner.cli import lean

class Info(ctypes.Structure):
    _fields_ = [(name, ctypes.c_size_t) for name in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]

info = ctypes.CDLL(None).mallinfo2
info.restype = Info
if sys.argv[1] == "kept":
    print(lean.keep_freed_memory())
big = bytes(200 << 20)  # a text of a large plan's size
mapped = info().hblkhd  # bytes in blocks mapped apart from the heap
del big
again = bytes(200 << 20)
# Mapped apart; in the heap; the heap no larger for the second (the first's place reused).
print(mapped >= 200 << 20, info().arena >= 200 << 20, info().arena < 400 << 20)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux") or not os.confstr(
    "CS_GNU_LIBC_VERSION"), reason="glibc's allocator only")
def test_a_short_lived_command_keeps_freed_memory_for_the_next_large_block() -> None:
    def run(how: str) -> list[str]:
        out = subprocess.run([sys.executable, "-c", FREED, how], capture_output=True,
                             text=True, check=True).stdout
        return out.split()

    # As glibc does by default: a large block mapped apart (and given back when freed).
    assert run("as-is") == ["True", "False", "True"]
    # Taken from the heap, and kept there when freed: the next one reuses its place.
    assert run("kept") == ["True", "False", "True", "True"]


def test_no_allocator_is_touched_where_it_is_not_glibcs(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setattr(sys, "platform", "darwin")
    assert lean.keep_freed_memory() is False
    monkeypatch.setattr(sys, "platform", "linux")
    import ctypes

    class Refusing:
        @staticmethod
        def mallopt(option: int, value: int) -> int:
            return 0

    monkeypatch.setattr(ctypes, "CDLL", lambda _name: Refusing())
    assert lean.keep_freed_memory() is False
    monkeypatch.setattr(ctypes, "CDLL", lambda _name: object())  # no mallopt at all
    assert lean.keep_freed_memory() is False

"""Settings for a short-lived headless process: the work it skips, and why none is needed.

A headless plan is one process that validates the planner's own models, plans, writes two
files and exits, in about a tenth of a second. Two things pydantic and Python do by default
cost it a sizeable share of that time and buy it nothing:

- Pydantic searches the installed distributions' entry points for plugins when the first
  validator is built. PYDANTIC_DISABLE_PLUGINS turns the search off, but pydantic's plugin
  loader still imports `importlib.metadata` (and with it email, zipfile, csv, socket…)
  before it reads the setting. While plugins are off, the loader is replaced by one that
  answers "no plugins" the same way; it hands over to pydantic's own the moment plugins
  are turned back on, so nothing a user sets is ever overridden.
- The cyclic garbage collector runs every 700 new container objects, about 70 passes over
  a heap that only grows while modules, models and validators are built, and that is freed
  at exit anyway, and that find nothing to free. A threshold of a million keeps a plain
  plan (about half a million new containers) from any pass; memory stays bounded. At
  exit, Python collects once more over every module's objects while tearing them down,
  about a fifth of the process's time: the heap is frozen first (after the exit handlers
  have run), so that pass skips what the operating system frees anyway.
- Even so, tearing the interpreter down frees the heap of modules, models and validators
  one object at a time, a few milliseconds the operating system does at once when the
  process ends. In the command's own process (its console script, or `python -m
  planner`), once the plan is done, the process ends as any exit would (stdout and stderr
  flushed, every exit handler run, the same status) but without that teardown.
- Reading a large plan for the first time makes and frees a few texts of its size (80 MB
  for 100,000 runs). glibc gives each block that large back to the operating system when
  it is freed and maps the next one afresh, and on a virtual machine (most rented ones)
  every new page is a fault of a few microseconds: a third of a million faults, most of a
  second of system time, for one read. A short-lived command (`status`, a headless plan,
  `replan`, `run --dry-run`, `slurm`) asks glibc (`mallopt`) to take large blocks from its
  heap and keep what is freed for the next: a quarter fewer faults and a few tenths of a
  second, for a peak a few hundred megabytes higher, which goes back when the process ends
  moments later. Another C library, or a program importing the planner, is left as it is.
"""

from __future__ import annotations

import atexit
import gc
import importlib
import os
import sys
import threading
import types
from collections.abc import Iterable

PLUGINS = "PYDANTIC_DISABLE_PLUGINS"
"""Pydantic's setting that turns its plugins off."""

OFF = ("__all__", "1", "true")
"""The values of PLUGINS for which pydantic loads no plugin at all."""

LOADER = "pydantic.plugin._loader"
"""Pydantic's plugin loader module."""

GC_THRESHOLD = 1_000_000
"""New container objects between two collections of the youngest generation."""


def _plugins_off() -> bool:
    return os.environ.get(PLUGINS) in OFF


def get_plugins() -> Iterable[object]:
    """Pydantic's plugins: none while PYDANTIC_DISABLE_PLUGINS turns them all off (what
    pydantic's own loader answers then); otherwise pydantic's own loader, put back."""
    if _plugins_off():
        return ()
    if getattr(sys.modules.get(LOADER), "get_plugins", None) is get_plugins:
        del sys.modules[LOADER]
    return importlib.import_module(LOADER).get_plugins()  # type: ignore[no-any-return]


def _without_plugin_search() -> None:
    """Stand in for pydantic's plugin loader while plugins are off, if it is not loaded yet."""
    if LOADER in sys.modules or not _plugins_off():
        return
    stand_in = types.ModuleType(LOADER, "Stands in for pydantic's plugin loader while "
                                        "PYDANTIC_DISABLE_PLUGINS turns plugins off.")
    stand_in.get_plugins = get_plugins  # type: ignore[attr-defined]
    sys.modules[LOADER] = stand_in


def lean_process() -> None:
    """Settings for a headless plan's process (see the module's docstring): plugins off
    unless PYDANTIC_DISABLE_PLUGINS is already set, no plugin search, rarer collections,
    no collection over the whole heap at exit, freed memory kept for reuse."""
    os.environ.setdefault(PLUGINS, "__all__")
    _without_plugin_search()
    keep_freed_memory()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(gen0, GC_THRESHOLD), gen1, gen2)
    # Registered first, so run last: every other exit handler (temporary folders' cleanup)
    # runs before, with the collector as it was.
    atexit.register(gc.freeze)


_M_TRIM_THRESHOLD, _M_TOP_PAD, _M_MMAP_MAX = -1, -2, -4
"""glibc's `mallopt` parameters (malloc.h)."""
_TOP_PAD = 64 << 20
"""Bytes the heap grows by at least, each time it grows."""


def keep_freed_memory() -> bool:
    """Have glibc's allocator take large blocks from the heap and keep what is freed, for a
    short-lived command's process (see the module's docstring); whether it took the
    settings (False: not glibc, or it refused)."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        import ctypes

        mallopt = ctypes.CDLL(None).mallopt
        if not os.confstr("CS_GNU_LIBC_VERSION"):
            return False
    except (OSError, AttributeError, ValueError):
        return False
    # Each call answers 1 when glibc takes the setting.
    return all(mallopt(option, value) == 1 for option, value in (
        (_M_MMAP_MAX, 0), (_M_TRIM_THRESHOLD, 2**31 - 1), (_M_TOP_PAD, _TOP_PAD)))


def _is_the_command() -> bool:
    """Whether this process runs the `campaign-planner` command itself, its console script
    or `python -m planner`, rather than a program that calls `console` along the way."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None:
        return bool(spec.name == "planner.__main__")
    return os.path.basename(getattr(main, "__file__", "") or "") == "campaign-planner"


_kept: list[object] = []
_holding = False


def hold_to_exit() -> None:
    """From now on `keep` holds what it is given, when this process is the command's own
    (and so ends through `end_process`)."""
    global _holding
    _holding = _is_the_command()


def keep(*objects: object) -> None:
    """Hold `objects` until the process ends, when `hold_to_exit` said it ends without the
    teardown: a large plan's millions of objects are then left to the operating system,
    not freed one by one as the command's function returns (a good part of a second).
    Anywhere else (a program calling `main`), nothing is held."""
    if _holding:
        _kept.extend(objects)


def end_process(status: int) -> int:
    """End the command's process with `status` without the interpreter's teardown (see the
    module's docstring): exit handlers run and stdout and stderr are flushed first, as at
    any exit. Returns `status`, for the caller to exit with as usual, where the process is
    not the command's own, another thread still runs, or flushing fails (a closed pipe,
    which the interpreter then reports as it always does)."""
    if not _is_the_command() or threading.active_count() > 1:
        return status
    atexit._run_exitfuncs()
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        return status
    os._exit(status)

"""Shared fixtures: presets as dicts to edit, and helpers to plan them."""

from __future__ import annotations

import copy
import os
import tomllib
from datetime import UTC, datetime
from importlib import resources
from typing import Any

import pytest
from hypothesis import settings

from planner.campaign import plan_campaign
from planner.packing import witness
from planner.planfile.plan import Plan
from planner.spec.catalog import Catalog, load_catalog
from planner.spec.loading import parse_preset

CREATED = datetime(2026, 1, 1, tzinfo=UTC)

# No example has a deadline: on a loaded machine, or beside other workers, a slow example
# is load, not a bug. Loaded here, before any test module builds its own settings from it.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(autouse=True)
def _no_schedule_kept_from_another_test() -> None:
    """Each test packs from scratch: a capacity proved in an earlier test of the same process
    would otherwise hand `pack` its schedule (planner.packing.witness), and a test's result
    would depend on which tests ran before it."""
    witness.forget()


def shipped(name: str) -> dict[str, Any]:
    """A shipped preset as a dict, to edit in a test."""
    raw = resources.files("presets").joinpath(f"{name}.toml").read_text(encoding="utf-8")
    return copy.deepcopy(tomllib.loads(raw))


def plan_dict(data: dict[str, Any], catalog: Catalog | None = None) -> Plan:
    """Plan a preset given as a dict."""
    preset = parse_preset(data, "test.toml")
    return plan_campaign(preset, catalog or load_catalog(), created=CREATED, source="test.toml")


@pytest.fixture
def ablation() -> dict[str, Any]:
    """The default preset, editable."""
    return shipped("ablation-7d")


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """How many processes `-n auto` (the default, in pyproject.toml's addopts) starts.

    A worker takes seconds to start, more than a few named files take to run, so named
    files run in this process. The whole suite, a folder or many files run on one worker
    per CPU and one more, at most five: many tests spend their time waiting on the
    processes they start (on 2 CPUs, 3 workers ran the suite in 306 s, 2 in 356 s), and
    each worker holds its own torch and models in memory.
    PYTEST_XDIST_AUTO_NUM_WORKERS, or an explicit `-n`, still decides when given.
    """
    given = os.environ.get("PYTEST_XDIST_AUTO_NUM_WORKERS", "")
    if given.isdigit():
        return int(given)
    named = [a.split("::")[0] for a in config.args]
    if named and all(os.path.isfile(a) for a in named) and len(set(named)) <= 3:
        return 0
    return min(5, len(os.sched_getaffinity(0)) + 1)

"""campaign-planner core: what fits in a GPU rental window, as a runnable plan.

This package never imports the terminal UI, and imports torch only inside the functions
that measure, so a headless plan loads neither. The names below are the library's public
surface; each is imported on first use, so `import planner` alone stays light:

    from planner import load_catalog, load_preset, plan_campaign
    preset, _ = load_preset("ablation-7d")
    plan = plan_campaign(preset, load_catalog())

ARCHITECTURE.md maps the packages.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_PUBLIC = {
    "plan_campaign": "planner.campaign",
    "InputError": "planner.errors",
    "Preset": "planner.spec.preset",
    "load_preset": "planner.spec.loading",
    "load_preset_file": "planner.spec.loading",
    "Catalog": "planner.spec.catalog",
    "load_catalog": "planner.spec.catalog",
    "Measurements": "planner.figures.measurements",
    "load_measurements": "planner.figures.measurements",
    "Plan": "planner.planfile.plan",
    "make_order": "planner.planfile.order",
    "read_plan": "planner.planfile.export",
    "write_exports": "planner.planfile.export",
    "measure_preset": "planner.measure",
}
"""Each public name and the module that defines it."""

__all__ = [
    "Catalog",
    "InputError",
    "Measurements",
    "Plan",
    "Preset",
    "__version__",
    "load_catalog",
    "load_measurements",
    "load_preset",
    "load_preset_file",
    "make_order",
    "measure_preset",
    "plan_campaign",
    "read_plan",
    "write_exports",
]

if TYPE_CHECKING:
    from planner.campaign import plan_campaign
    from planner.errors import InputError
    from planner.figures.measurements import Measurements, load_measurements
    from planner.measure import measure_preset
    from planner.planfile.export import read_plan, write_exports
    from planner.planfile.order import make_order
    from planner.planfile.plan import Plan
    from planner.spec.catalog import Catalog, load_catalog
    from planner.spec.loading import load_preset, load_preset_file
    from planner.spec.preset import Preset


def __getattr__(name: str) -> Any:
    # PEP 562: a public name is imported the first time it is asked for, so that
    # `import planner` (which every submodule's import runs) costs nothing.
    module = _PUBLIC.get(name)
    if module is None:
        raise AttributeError(f"module 'planner' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value

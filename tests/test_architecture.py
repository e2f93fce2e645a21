"""The layout the contracts of ARCHITECTURE.md describe: a handful of top-level modules, no
import cycle anywhere, the terminal UI reached only by plain imports, the public names."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import grimp

import planner

ROOT = Path(planner.__file__).resolve().parent.parent


def _graph() -> grimp.ImportGraph:
    # Imports under TYPE_CHECKING never run, so they cannot close a cycle.
    return grimp.build_graph("planner", "screens", exclude_type_checking_imports=True)


def test_planner_has_at_most_twelve_top_level_modules() -> None:
    top = sorted(p.name for p in (ROOT / "planner").glob("*.py"))
    assert len(top) <= 12, top


def test_no_import_cycle() -> None:
    graph = _graph()
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for dep in graph.find_modules_directly_imported_by(module):
            if dep not in index:
                visit(dep)
                low[module] = min(low[module], low[dep])
            elif dep in stack:
                low[module] = min(low[module], index[dep])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                cycles.append(sorted(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 5000))
    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    assert cycles == []


def test_the_terminal_ui_is_launched_by_a_plain_import() -> None:
    graph = _graph()
    assert "screens.app" in graph.find_modules_directly_imported_by("planner.cli.main")
    # Every import between the project's modules is a plain one the contracts can see.
    # Only two modules import by name: the package's public names, resolved lazily
    # (PEP 562); and a user's own `factory` module, named in their preset.
    allowed = {ROOT / "planner" / "__init__.py", ROOT / "planner" / "measure" / "workloads.py"}
    for path in [*(ROOT / "planner").rglob("*.py"), *(ROOT / "screens").rglob("*.py")]:
        if path in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "attr", getattr(node.func, "id", ""))
                assert name not in {"import_module", "__import__"}, path


def test_the_public_names_resolve_and_import_planner_stays_light() -> None:
    code = ("import sys, planner\n"
            "light = not any(m.split('.')[0] == 'pydantic' for m in sys.modules)\n"
            "names = [getattr(planner, n) for n in planner.__all__]\n"
            "print(light, all(n is not None for n in names), planner.plan_campaign.__module__)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.split() == ["True", "True", "planner.campaign"]
    assert set(planner.__all__) == {"__version__", *planner._PUBLIC}


def test_python_dash_m_planner_runs_the_command() -> None:
    proc = subprocess.run([sys.executable, "-m", "planner", "presets"], capture_output=True,
                          text=True, check=True)
    assert "ablation-7d" in proc.stdout

"""A headless run, in a fresh interpreter, loads neither textual nor torch."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

CODE = """
import sys
from planner.cli.main import main
rc = main(["--preset", "ablation-30d", "--out", sys.argv[1]])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in {"textual", "torch", "screens"})
print(rc, heavy)
"""


def test_headless_run_imports_neither_textual_nor_torch(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-c", CODE, str(tmp_path / "o")], capture_output=True,
                          text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "0 []"


def test_import_planner_alone_is_light() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import sys, planner; print(sorted(m for m in sys.modules "
         "if m.split('.')[0] in {'textual','torch','screens','pydantic'}))"],
        capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"


EMBED_CODE = """
import sys
from planner.cli.main import main
rc = main(["--preset", "embedding-3d", "--out", sys.argv[1]])
heavy = sorted(m for m in sys.modules if m.split(".")[0] in
               {"textual", "torch", "screens", "transformers", "sentence_transformers",
                "tokenizers", "safetensors", "numpy"})
print(rc, heavy)
"""


def test_an_embedding_plan_judges_the_model_folder_without_loading_it(tmp_path: Path) -> None:
    # With the packaged model installed the plan reads its folder (backend, module stack,
    # settings checked); without it the plan is made all the same. Neither loads a library.
    proc = subprocess.run([sys.executable, "-c", EMBED_CODE, str(tmp_path / "o")],
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip().splitlines()[-1] == "0 []"


PLAIN = """
import sys
from planner.cli.main import main
rc = main(["--preset", sys.argv[1]] + sys.argv[2:])
print(rc, sorted(m for m in sys.modules if m.split(".")[0] == "ortools"))
"""


def test_a_plain_plan_never_loads_the_optimizer(tmp_path: Path) -> None:
    # A plan without --out, and an export whose every run fits, stay on the fast packer.
    for args in (["ablation-30d"], ["ablation-7d", "--out", str(tmp_path / "o")]):
        proc = subprocess.run([sys.executable, "-c", PLAIN, *args], capture_output=True,
                              text=True, check=True)
        assert proc.stdout.strip().splitlines()[-1] == "0 []"


LIGHT = """
import sys
sys.argv = ["campaign-planner", "--preset", "ablation-30d", "--out", sys.argv[1]]
from planner.cli import console
rc = console()
print(rc, sorted(UNNEEDED & set(sys.modules)))
"""
PYDANTIC_ALONE = """
import sys
from pydantic import BaseModel

class M(BaseModel):
    x: int

M.model_validate({"x": 1})
print(0, sorted(UNNEEDED & set(sys.modules)))
"""
UNNEEDED = ("{'importlib.resources', 'zipfile', 'planner.measure', 'planner.measure.stack', "
            "'pydantic.functional_serializers', 'planner.figures.measurements', "
            "'planner.figures.multicard'}")


def test_a_plain_training_plan_loads_only_what_it_uses(tmp_path: Path) -> None:
    # The shipped files are found without importlib.resources (and its zip support); the
    # stack preflight loads only for an order whose CUDA is older than the card's; no model
    # needs pydantic's serializer decorators; measurements load only when given, and
    # multi-card terms only for runs on several cards. What pydantic loads for any model
    # (its plugin search reads the installed packages' metadata) is pydantic's.
    def loaded(code: str, *args: str) -> str:
        proc = subprocess.run([sys.executable, "-c", f"UNNEEDED = {UNNEEDED}\n{code}", *args],
                              capture_output=True, text=True, check=True)
        return proc.stdout.strip().splitlines()[-1]

    rc, names = loaded(LIGHT, str(tmp_path / "o")).split(" ", 1)
    pydantic_alone = ast.literal_eval(loaded(PYDANTIC_ALONE).split(" ", 1)[1])
    assert rc == "0" and set(ast.literal_eval(names)) <= set(pydantic_alone)

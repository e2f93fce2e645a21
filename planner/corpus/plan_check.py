"""Judging the model at plan time, so the rented machine never finds out first.

When the model's folder is on this machine, the plan names the backend that will load it
and the module stack the vectors will go through; a folder no installed backend can load,
and preset settings that contradict the folder, are refused here (see
`planner.corpus.faithful`). Reads JSON files only: a headless plan imports nothing heavy.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.corpus.backends import ST, choose
from planner.corpus.faithful import judge, query_prompt
from planner.corpus.folder import read_folder
from planner.corpus.tokens import find_model_dir
from planner.spec.embedding import Embedding
from planner.spec.preset import Preset


@dataclass
class Verdict:
    """What planning found out about the model."""

    backend: str
    """The backend named in the plan (`auto` when the folder is not here)."""
    stack: str = ""
    """The folder's module stack, when found."""
    dim: int | None = None
    """Vector size the worker will write, when known."""
    warnings: list[str] = field(default_factory=list)


def check_model(e: Embedding, packages: list[str], *, source: str | None = None) -> Verdict:
    """The plan's backend for `e.model`, with the folder judged when it is found.
    `packages`: what the order installs on the rented machine."""
    path = find_model_dir(e.model)
    if path is None:
        query = query_prompt(e, None)
        return Verdict(backend=e.backend, warnings=[query] if query else [])
    folder = read_folder(path)
    backend = choose(e.backend, folder, source=source)
    warnings = judge(e, folder, source=source)
    query = query_prompt(e, folder)
    if query:
        warnings.append(query)
    if backend == ST and not any(p.split("=")[0].split("[")[0].strip().lower() in
                                 ("sentence-transformers", "sentence_transformers")
                                 or "embed-st" in p for p in packages):
        warnings.append("the model loads with sentence-transformers: add "
                        "\"sentence-transformers\" and \"transformers\" to order.packages "
                        "(or install campaign-planner[embed-st] on the machine)")
    return Verdict(backend=backend, stack=folder.stack(), dim=e.dimensions or folder.dim,
                   warnings=warnings)


def judge_preset(preset: Preset, source: str | None = None) -> list[str]:
    """The plan's judgement of an embedding preset's model, for the commands that run
    before the plan (`corpus scan`, `corpus size`): what the plan refuses is refused
    (InputError), and the plan's warnings about the model are returned."""
    assert preset.embedding is not None
    return check_model(preset.embedding, preset.order.packages, source=source).warnings

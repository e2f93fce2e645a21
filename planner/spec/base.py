"""The base classes every input and output model shares, and their field descriptions.

Every field carries a docstring. Pydantic can turn those into descriptions as each class
is created (`use_attribute_docstrings`), but that reads and parses the source of every
model at import, most of a headless run's time. So models are built lazily
(`defer_build`: a model's validator is made when first used) and descriptions are read
from the docstrings only where they are shown: the JSON Schema (`with_descriptions`) and
the interactive planner's tooltips (`field_doc`).

The modules defining the models a headless plan builds (the preset, the catalog, the plan
and the order) leave out `from __future__ import annotations`: with it every annotation is
a string that pydantic compiles and evaluates as the class is created, and again for each
subclass, a few milliseconds of every headless run. A name defined further down is quoted.
"""

import functools
import itertools
import typing
from typing import Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, model_validator

from planner.spec.printable import CONTROL, PROBLEM

SLUG = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""Names used in ids and paths: letters, digits, `.`, `_` and `-`, not starting with a dot."""

M = TypeVar("M", bound=type[BaseModel])


class Lax(BaseModel):
    """Frozen model for what the planner builds (plans, reports, manifests): unknown keys are
    still refused, but types are coerced, since the values come from code, not from people."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, defer_build=True)


class Strict(BaseModel):
    """Frozen, strict pydantic model: unknown keys refused, field docstrings as descriptions
    (see `with_descriptions`), and no control character in any text but a command's
    (`SCRIPTS`): what an input file names is shown in a terminal (`planner.spec.printable`)."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        defer_build=True,
        # inf and nan are never a figure anyone means; refused in every input file.
        allow_inf_nan=False,
    )
    SCRIPTS: ClassVar[frozenset[str]] = frozenset()
    """Fields holding a command template: their line breaks are a script's, checked with
    the template (and shown escaped where printed)."""

    @model_validator(mode="after")
    def _printable(self) -> Self:
        for name, value in self.__dict__.items():
            if name in self.SCRIPTS:
                continue
            where = _control_in(value)
            if where is not None:
                raise ValueError(f"@{name}{where}: {PROBLEM}")
        return self


def _control_in(value: Any) -> str | None:
    """Where in a field's value (itself, an item, a key) text holds a control character."""
    if isinstance(value, str):
        return "" if CONTROL.search(value) else None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if isinstance(item, str | list | tuple | dict) and _control_in(item) is not None:
                return f"[{i}]"
    elif isinstance(value, dict):
        for k, item in value.items():
            if isinstance(k, str) and CONTROL.search(k):
                return ""
            if _control_in(item) is not None:
                return f".{k}"
    return None


@functools.cache
def _own_docstrings(cls: type) -> dict[str, str]:
    """`name: str` followed by a string, in the class body's source: name → docstring."""
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = ast.parse(source).body
    if not body or not isinstance(body[0], ast.ClassDef):
        return {}
    out: dict[str, str] = {}
    statements = body[0].body
    for node, after in itertools.pairwise(statements):
        if (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr) and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)):
            out[node.target.id] = inspect.cleandoc(after.value.value)
    return out


def field_doc(model: type[BaseModel], name: str) -> str:
    """The docstring of field `name` of `model` (or of the base class declaring it)."""
    for cls in model.__mro__:
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            doc = _own_docstrings(cls).get(name)
            if doc:
                return doc
    return ""


def _nested(annotation: Any) -> list[type[BaseModel]]:
    """The models named in a field's type (`list[Variant] | None` → [Variant])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [m for arg in typing.get_args(annotation) for m in _nested(arg)]


def with_descriptions(model: M) -> M:
    """`model`, and every model its fields name, with each field's docstring as its
    description, rebuilt so that the JSON Schema shows them."""
    seen: set[type[BaseModel]] = set()
    order: list[type[BaseModel]] = []

    def visit(m: type[BaseModel]) -> None:
        if m in seen:
            return
        seen.add(m)
        for info in m.model_fields.values():
            for sub in _nested(info.annotation):
                visit(sub)
        # Children before parents: a parent's schema embeds its children's as built.
        order.append(m)

    visit(model)
    for m in order:
        for name, info in m.model_fields.items():
            if info.description is None:
                info.description = field_doc(m, name) or None
        m.model_rebuild(force=True)
    return model

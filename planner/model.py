"""The base class every input and output model shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

SLUG = r"^[A-Za-z0-9][A-Za-z0-9._-]*$"
"""Names used in ids and paths: letters, digits, `.`, `_` and `-`, not starting with a dot."""


class Lax(BaseModel):
    """Frozen model for what the planner builds (plans, reports, manifests): unknown keys are
    still refused, but types are coerced, since the values come from code, not from people."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=False,
        use_attribute_docstrings=True,
    )


class Strict(BaseModel):
    """Frozen, strict pydantic model: unknown keys refused, field docstrings as descriptions."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        use_attribute_docstrings=True,
        # inf and nan are never a figure anyone means; refused in every input file.
        allow_inf_nan=False,
    )

"""The base class every input and output model shares."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """Frozen, strict pydantic model: unknown keys refused, field docstrings as descriptions."""

    model_config = ConfigDict(
        extra="forbid",
        frozen=True,
        strict=True,
        use_attribute_docstrings=True,
    )

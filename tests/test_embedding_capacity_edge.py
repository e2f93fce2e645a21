"""The embedding capacity at its edge: planning exactly the documents it reports fits one
version whole by every check the plan makes, and one document more does not."""

from __future__ import annotations

from typing import Any

import pytest

from planner.campaign import plan_campaign
from planner.planfile.plan import Plan
from planner.spec.catalog import load_catalog
from planner.spec.loading import parse_preset
from tests.conftest import CREATED, shipped


def _plan(data: dict[str, Any]) -> Plan:
    return plan_campaign(parse_preset(data, "test.toml"), load_catalog(), created=CREATED)


def _whole(plan: Plan) -> bool:
    """One version placed on every card and no "documents fit" shortfall in the warnings."""
    assert plan.embedding is not None
    return plan.embedding.versions_fit == 1 and not any(
        "documents fit" in w for w in plan.warnings)


@pytest.mark.parametrize(("name", "cards", "batching"), [
    ("embedding-3d", None, None), ("embedding-7d", None, None), ("embedding-30d", None, None),
    ("embedding-7d", 3, "original"), ("embedding-3d", 1, "length-grouped"),
    ("embedding-30d", 5, "original"),
])
def test_the_documents_capacity_plans_whole_and_one_more_does_not(
        name: str, cards: int | None, batching: str | None) -> None:
    data = shipped(name)
    if cards is not None:
        data["campaign"]["cards"] = cards
    if batching is not None:
        data["embedding"]["batching"] = batching
    data["embedding"]["versions"] = 1
    cap = _plan(data).summary.capacity
    assert cap is not None and cap.documents
    data["embedding"]["documents"] = cap.documents
    at = _plan(data)
    assert _whole(at), (name, cap.documents, at.warnings)
    assert at.summary.capacity is not None and at.summary.capacity.documents == cap.documents
    data["embedding"]["documents"] = cap.documents + 1
    assert not _whole(_plan(data)), (name, cap.documents)

"""The documented command-template examples (docs/presets.md), checked against what the
planner does: each example's argument vector is what the template fills to, each refusal's
message is what loading the template says."""

from __future__ import annotations

import re
import tomllib
from typing import Any

import pytest

from planner.spec.templates import TRAINING_PLACEHOLDERS, Args, check_template, fill
from tests.readme_examples import page_with

README = page_with("<!-- template example -->")


def _blocks(kind: str) -> list[dict[str, Any]]:
    found = re.findall(rf"<!-- template {kind} -->\n```toml\n(.*?)```", README, re.DOTALL)
    return [tomllib.loads(text) for text in found]


EXAMPLES = _blocks("example")
REFUSALS = _blocks("refusal")


def test_the_readme_has_its_examples() -> None:
    assert len(EXAMPLES) >= 2 and len(REFUSALS) >= 3
    assert any(e.get("shell") for e in EXAMPLES) and not all(e.get("shell") for e in EXAMPLES)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["command"][:30])
def test_a_readme_example_fills_to_the_argv_it_shows(example: dict[str, Any]) -> None:
    shell = example.get("shell", False)
    check_template(example["command"], TRAINING_PLACEHOLDERS, shell)
    factors = example["factors"]
    values = {"factors": factors, "overrides": Args(f"{k}={v}" for k, v in factors.items()),
              **{k: v for k, v in example.items()
                 if k not in ("command", "shell", "factors", "argv")}}
    argv, _ = fill(example["command"], values, shell)
    assert argv == example["argv"]


@pytest.mark.parametrize("refusal", REFUSALS, ids=lambda e: e["command"][:30])
def test_a_readme_refusal_says_what_the_readme_shows(refusal: dict[str, Any]) -> None:
    with pytest.raises(ValueError) as info:
        check_template(refusal["command"], TRAINING_PLACEHOLDERS, refusal.get("shell", False))
    assert str(info.value) == refusal["error"]

"""The one-factor rule: each variant differs from the kept baseline by exactly one factor.

A table of configurations that cannot be compared is worth less than a small set where
every difference in results can be attributed to one change, so a break of the rule is an
error unless the variant carries an explicit waiver, which turns it into a plan warning.
"""

from __future__ import annotations

from typing import NamedTuple

from planner.spec.factors import same_value
from planner.spec.preset import Training, Variant


class Finding(NamedTuple):
    """One break of the rule, with the field at fault."""

    field: str
    message: str
    waived: bool


def variant_findings(training: Training, variant: Variant) -> list[str]:
    """The rule's complaints about one variant, as sentences (empty when it is sound)."""
    base = training.baseline.factors
    problems: list[str] = []
    if len(variant.changes) == 0:
        problems.append("changes no factor: it would repeat the baseline")
    elif len(variant.changes) > 1:
        names = ", ".join(sorted(variant.changes))
        problems.append(
            f"changes {len(variant.changes)} factors ({names}); an ablation changes exactly one"
        )
    for factor, value in sorted(variant.changes.items()):
        if factor not in base:
            known = ", ".join(sorted(base))
            problems.append(
                f"changes {factor!r}, which the baseline lacks (baseline factors: {known})")
        elif same_value(base[factor], value):
            problems.append(f"sets {factor} = {value!r}, the baseline's own value")
    return problems



def check(training: Training, section: str) -> list[Finding]:
    """Every break of the one-factor rule in a training workload, in variant order."""
    findings: list[Finding] = []
    for i, variant in enumerate(training.variants):
        for problem in variant_findings(training, variant):
            findings.append(
                Finding(
                    field=f"{section}.variants[{i}].changes",
                    message=f"variant {variant.name!r} {problem}",
                    waived=bool(variant.waive_one_factor),
                )
            )
    return findings

"""Names of devices, without torch: the CPU's model, and the catalog card a GPU is."""

from __future__ import annotations

import platform

from planner.spec.catalog import Catalog

__all__ = ["cpu_model", "match_card"]


def cpu_model() -> str:
    """The CPU's model name, as /proc/cpuinfo (or the platform) gives it."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def _tokens(text: str) -> set[str]:
    return set(text.lower().replace("-", " ").replace("(", " ").replace(")", " ").split())


def match_card(name: str, cc: str, memory_gib: float, catalog: Catalog) -> str:
    """The catalog key of a device, from its name, compute capability and memory; "" when
    no single card matches."""
    want = _tokens(name) - {"nvidia", "geforce"}
    best: list[tuple[int, str]] = []
    for key, card in catalog.cards.items():
        if card.compute_capability != cc or abs(card.memory_gib - memory_gib) > 0.15 * (
                card.memory_gib):
            continue
        have = _tokens(f"{card.name} {card.memory_type}") - {"nvidia", "geforce"}
        if not want <= have and not (want & have):
            continue
        best.append((len(want & have), key))
    best.sort(reverse=True)
    if len(best) == 1 or (len(best) > 1 and best[0][0] > best[1][0]):
        return best[0][1]
    return ""

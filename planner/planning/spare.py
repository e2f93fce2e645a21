"""Which runs a plan leaves out but keeps whole, ready for a replan to add.

A run the window has no room for is listed in `not_fitting` with its reason; those that
fit memory are also kept whole in the plan's `held` runs (command, argument vector, paths,
the same rules as a scheduled run), so that when the campaign goes faster than planned a
replan can put them on the cards it frees. Lowest seeds first, as the packer fills them
(complete seed sets first), and an evaluation only with the run it evaluates. At most as
many as the plan schedules (or one seed set, when that is more): a window cannot take more
than that again unless its runs go over twice as fast, and the plan stays its own size.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner.packing.schedule import Placement
from planner.spec.matrix import RunSpec


def spare_specs(specs: Sequence[RunSpec], placed: Sequence[Placement | None],
                seeds: Sequence[int]) -> set[int]:
    """Indices of the left-out specs to keep whole."""
    layer = {s: n for n, s in enumerate(seeds)}
    most = max(sum(p is not None for p in placed), len(specs) // max(len(seeds), 1))
    out: set[int] = set()
    left = [i for i, p in enumerate(placed) if p is None and specs[i].config.fits]
    left.sort(key=lambda i: (layer.get(specs[i].seed, len(layer)), specs[i].depends_on >= 0, i))
    for i in left:
        if len(out) >= most:
            break
        after = specs[i].depends_on
        if after >= 0 and placed[after] is None and after not in out:
            continue
        out.add(i)
    return out

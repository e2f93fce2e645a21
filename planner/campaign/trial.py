"""The runs a trial starts: each configuration's first seed, built as the plan builds it."""

from __future__ import annotations

from planner.campaign import campaign_id, check
from planner.campaign.runs import check_ids, training_runs
from planner.errors import InputError
from planner.figures.estimates import DEFAULT_ESTIMATE, figures_on
from planner.packing.pack import Packing
from planner.packing.schedule import Placement
from planner.planfile.plan import Run
from planner.spec.catalog import Catalog
from planner.spec.matrix import configs, expand
from planner.spec.preset import Preset


def trial_runs(preset: Preset, catalog: Catalog, *, checkpoint_root: str, export_root: str,
               source: str | None = None) -> list[Run]:
    """The first seed's training run of every configuration (baseline first), built as a
    plan builds it (the same command, filled in the same way), with checkpoints and exports
    under the roots given (a trial's scratch folder), on cards 0 to `cards_per_run` less one.
    Raises InputError on bad input, and for a campaign with no training runs."""
    card, _ = check(preset, catalog, source)
    if preset.training is None:
        raise InputError("a trial runs training configurations; an embedding campaign's "
                         "batches are measured by `campaign-planner measure`",
                         file=source, field="campaign.kind")
    scratch = {"checkpoint_root": checkpoint_root, "export_root": export_root}
    on = figures_on(preset, catalog, DEFAULT_ESTIMATE, source)
    training = on.training
    assert training is not None
    training = training.model_copy(update=scratch)
    # The campaign's own id: the runs are named as the campaign's are.
    cid = campaign_id(preset)
    cfgs = configs(training, preset.campaign.card, card, catalog, on.overheads)
    first = training.seeds[0]
    specs = [s for s in expand(training, cfgs, cid, on.overheads)
             if s.kind == "train" and s.seed == first]
    check_ids(preset, training, specs, source)
    places: list[Placement | None] = [Placement(0.0, s.duration_h, tuple(range(s.cards)))
                                      for s in specs]
    packing = Packing(places, None, len(specs), "fast")
    runs, _, _ = training_runs(preset, training, cid, specs, [], packing, 1.0, 0.0, source)
    order = {s.id: n for n, s in enumerate(specs)}
    return sorted(runs, key=lambda r: order[r.id])

"""Estimator figures on hand-computed cases."""

from __future__ import annotations

import pytest

from planner.corpus.lengths import estimate, length_grouped, original_order
from planner.spec.catalog import load_catalog
from planner.spec.matrix import fit_memory, run_hours
from planner.spec.preset import Overheads, TokenLengths, Training
from tests.conftest import plan_dict, shipped


def test_run_duration_adds_startup_steps_evaluations_and_checkpoints() -> None:
    o = Overheads(startup_minutes=5, eval_every_steps=300, eval_minutes=6,
                  checkpoint_every_steps=250, checkpoint_write_minutes=1)
    # 300 s startup + 1000 × 2 s + ceil(1000/300)=4 × 360 s + 1000/250=4 × 60 s = 3980 s
    assert run_hours(1000, 2.0, o) == pytest.approx(3980 / 3600)


def test_zero_intervals_mean_one_evaluation_and_one_checkpoint_at_the_end() -> None:
    o = Overheads(startup_minutes=0, eval_minutes=10, checkpoint_write_minutes=2)
    assert run_hours(100, 1.0, o) == pytest.approx((100 + 600 + 120) / 3600)


def test_default_plan_headline_figures() -> None:
    plan = plan_dict(shipped("ablation-7d"))
    s, c = plan.summary, plan.campaign
    assert s.card_hours_bought == 168 * 4 == 672
    assert c.usable_hours == 168 - 2 - 6 == 160
    assert s.usable_card_hours == 640
    # baseline: 300 + 30000 × 3.6 + 15 × 720 + 30 × 60 = 120900 s
    base = next(r for r in plan.runs if r.id.endswith("-baseline-s0"))
    assert base.end_h - base.start_h == pytest.approx(120900 / 3600, abs=1e-3)
    assert base.start_h == 2.0
    assert s.matrix_runs == 18
    assert s.busy_card_hours == pytest.approx(sum(
        (r.end_h - r.start_h) * len(r.card) for r in plan.runs))
    assert s.idle_card_hours == pytest.approx(640 - s.busy_card_hours)
    assert s.utilization == pytest.approx(s.busy_card_hours / 640, abs=1e-4)


def test_information_first_order() -> None:
    plan = plan_dict(shipped("ablation-30d"))
    starts = [r.start_h for r in plan.runs]
    assert starts == sorted(starts), "plan order is start order: the executor follows it"
    train = [r for r in plan.runs if r.kind == "train"]
    assert {r.seed for r in train[:4]} == {0}, "seed 0 starts first on every card"
    for card in range(4):
        seeds = [r.seed for r in train if r.card == [card]]
        assert seeds == sorted(seeds), f"earlier seeds first on card {card}"
    by_id = {r.id: r for r in plan.runs}
    for r in plan.runs:
        if r.kind == "robustness":
            assert r.start_h >= by_id[r.depends_on].end_h


def test_first_complete_seed_set() -> None:
    plan = plan_dict(shipped("ablation-7d"))
    seed0 = [r for r in plan.runs if r.seed == 0]
    assert plan.summary.first_complete_seed == 0
    assert plan.summary.first_complete_seed_end_h == max(r.end_h for r in seed0)


def test_cost_when_price_known() -> None:
    data = shipped("ablation-7d")
    data["campaign"]["price_per_card_hour"] = 0.5
    plan = plan_dict(data)
    assert plan.summary.cost_total == 336.0
    assert plan.summary.cost_per_matrix_run == round(336.0 / plan.summary.matrix_runs_fit, 2)


def _training(**kw: object) -> Training:
    data = shipped("ablation-7d")["ablation"]
    data.update(kw)
    return Training.model_validate(data)


def test_micro_batch_reduction_keeps_effective_batch() -> None:
    t = _training()
    catalog = load_catalog()
    v = next(v for v in t.variants if v.name == "no-act-ckpt")
    mb, acc, peak, fits, reason, decision = fit_memory(
        v.name, v, t, "a6000", catalog.get("a6000"), catalog, Overheads())
    assert fits and not reason
    assert (mb, acc) == (8, 8)
    assert mb * acc == t.micro_batch * t.accumulation
    assert peak == pytest.approx(61.0 - 8 * 3.4)
    assert "effective batch 64" in decision and "micro-batch 8 × accumulation 8" in decision


def test_without_memory_scaling_it_does_not_fit_and_names_bigger_cards() -> None:
    t = _training()
    catalog = load_catalog()
    v = next(v for v in t.variants if v.name == "no-act-ckpt").model_copy(
        update={"memory_per_sample_gib": None})
    *_, fits, reason, _ = fit_memory(v.name, v, t, "a6000", catalog.get("a6000"), catalog,
                                     Overheads())
    assert not fits
    assert "a100-80" in reason and "h200" in reason and "a6000" not in reason.split("cards")[-1]


def test_variant_that_does_not_fit_memory_is_listed_with_reason() -> None:
    data = shipped("ablation-7d")
    del data["ablation"]["variants"][4]["memory_per_sample_gib"]
    plan = plan_dict(data)
    missing = [n for n in plan.not_fitting if "-no-act-ckpt-" in n.id]
    assert len(missing) == 3
    assert all("cards with the memory: a100-80" in n.reason for n in missing)
    assert not any(r.variant == "no-act-ckpt" for r in plan.runs)


def test_padding_of_equal_lengths_is_zero() -> None:
    same = TokenLengths(min=100, p50=100, p90=100, p99=100, max=100)
    est = estimate(same, 1000, 512, 10, 1000)
    for b in est.values():
        assert b.useful_tokens == b.padded_tokens == 100_000
        assert b.batches == 100
        assert b.padding_fraction == 0


def test_batching_strategies_by_hand() -> None:
    lens = [5, 1, 4, 2]
    assert original_order(lens, 2) == (2, 5 * 2 + 4 * 2)
    # longest first: [5,4] (5×2=10 ≤ 10), then [2,1] (2×2=4; budget allows 5 but 2 remain)
    assert length_grouped(lens, 10) == (2, 10 + 4)


def test_embedding_hours_from_padded_tokens_and_throughput() -> None:
    data = shipped("embedding-3d")
    plan = plan_dict(data)
    e = plan.embedding
    assert e is not None
    grouped = next(b for b in e.strategies if b.strategy == "length-grouped")
    tput = data["embedding"]["throughput_tokens_per_s"]["value"]
    assert grouped.hours_per_version == pytest.approx(grouped.padded_tokens / tput / 3600 / 2,
                                                      abs=1e-3)
    shard = plan.runs[0]
    assert shard.end_h - shard.start_h == pytest.approx(10 / 60 + grouped.hours_per_version,
                                                        abs=1e-3)
    assert e.versions_fit == 1 and e.documents_fit_first_version == 2_000_000
    original = next(b for b in e.strategies if b.strategy == "original")
    assert original.padding_fraction > grouped.padding_fraction


def test_embedding_that_does_not_fit_says_how_many_documents_do() -> None:
    data = shipped("embedding-3d")
    data["embedding"]["throughput_tokens_per_s"]["value"] = 400.0
    plan = plan_dict(data)
    e = plan.embedding
    assert e is not None and e.versions_fit == 0
    assert 0 < e.documents_fit_first_version < 2_000_000
    assert len(plan.not_fitting) == 2


def test_adaptation_keeps_base_model_parameters_and_data_together() -> None:
    plan = plan_dict(shipped("adaptation-30d"))
    assert plan.adaptation is not None
    assert plan.adaptation.base_model == "llama-7b (local copy)"
    assert plan.adaptation.trained_parameters == "adapter"
    assert plan.adaptation.dataset == "support-tickets-v3"
    train = [r for r in plan.runs if r.kind == "train"]
    assert all("--base-model 'llama-7b (local copy)'" in r.command
               and r.argv[r.argv.index("--base-model") + 1] == "llama-7b (local copy)"
               and "--dataset support-tickets-v3" in r.command and "--train adapter" in r.command
               for r in train)

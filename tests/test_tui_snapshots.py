"""Every screen of the terminal UI as a picture at a fixed size (pytest-textual-snapshot).

Snapshots live in tests/__snapshots__/test_tui_snapshots/. After a deliberate change to a
screen, regenerate with `pytest tests/test_tui_snapshots.py --snapshot-update` and look at
every changed .svg before committing it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import Input, TextArea

from tests.test_tui import make_app
from tests.test_tui_measure import fake_measure

SMALL = (80, 24)
"""The classic terminal: every screen is pictured at this size."""
BIG = (120, 36)
"""A roomier terminal, for the busy screens."""


async def still(pilot: Any) -> None:
    """No blinking cursors: the picture must not depend on when it is taken."""
    await pilot.pause()
    for widget in pilot.app.screen.query(Input):
        widget.cursor_blink = False
    for widget in pilot.app.screen.query(TextArea):
        widget.cursor_blink = False
    await pilot.pause()


def test_campaign_small(snap_compare: Any) -> None:
    """The first screen at 80×24: window 7 days, 4 cards, RTX A6000 chosen; short card
    names, the architecture left out so every column stays whole."""
    assert snap_compare(make_app(), terminal_size=SMALL, run_before=still)


def test_campaign_30_days_big(snap_compare: Any) -> None:
    """After `m`: 30 days; the headline says 18 of 18 runs fit; architecture shown."""
    assert snap_compare(make_app(), press=["m"], terminal_size=BIG, run_before=still)


def test_workload_small(snap_compare: Any) -> None:
    """The ablation matrix at 80×24: baseline factors wrapped, the table whole."""
    assert snap_compare(make_app(), press=["2"], terminal_size=SMALL, run_before=still)


def test_workload_big(snap_compare: Any) -> None:
    """The ablation matrix at 120×36: every column, the source of each figure."""
    assert snap_compare(make_app(), press=["2"], terminal_size=BIG, run_before=still)


def test_workload_adaptation_small(snap_compare: Any) -> None:
    """Adaptation at 80×24: base model, trained parameters and dataset on top."""
    assert snap_compare(make_app("adaptation-30d"), press=["2"], terminal_size=SMALL,
                        run_before=still)


def test_workload_embedding_small(snap_compare: Any) -> None:
    """Embedding: the corpus with named length quantiles, the fixed settings, batching."""
    assert snap_compare(make_app("embedding-7d"), press=["2"], terminal_size=SMALL,
                        run_before=still)


async def _two_factor(pilot: Any) -> None:
    await pilot.press("2", "a")
    await pilot.pause()
    screen = pilot.app.screen
    for name, text in (("name", "two"), ("changes", "positional=alibi, norm=layernorm"),
                       ("step", "3.5"), ("peak", "33")):
        screen.query_one(f"#{name}", Input).value = text
    await still(pilot)


def test_variant_form_flags_two_factors_small(snap_compare: Any) -> None:
    """The variant editor with a variant that changes two factors, flagged while typing."""
    assert snap_compare(make_app(), terminal_size=SMALL, run_before=_two_factor)


async def _two_factor_saved(pilot: Any) -> None:
    await _two_factor(pilot)
    await pilot.press("ctrl+s")
    await still(pilot)


def test_workload_with_flagged_variant_small(snap_compare: Any) -> None:
    """Saved anyway at 80×24: its row marked ✗, the reason in red on the status line."""
    assert snap_compare(make_app(), terminal_size=SMALL, run_before=_two_factor_saved)


def test_workload_with_flagged_variant_big(snap_compare: Any) -> None:
    """Saved anyway at 120×36: the check column says why in two words."""
    assert snap_compare(make_app(), terminal_size=BIG, run_before=_two_factor_saved)


def test_fit_small(snap_compare: Any) -> None:
    """What fits at 80×24: figures, the variant × seed table."""
    assert snap_compare(make_app(), press=["3"], terminal_size=SMALL, run_before=still)


def test_fit_big(snap_compare: Any) -> None:
    """What fits at 120×36: figures, variant × seed table, timeline, memory bars."""
    assert snap_compare(make_app(), press=["3"], terminal_size=BIG, run_before=still)


def test_fit_small_memory(snap_compare: Any) -> None:
    """At 80×24, scrolled to the memory bars: the legend on two lines, whole."""
    assert snap_compare(make_app(), press=["3", "m"], terminal_size=SMALL, run_before=still)


def test_fit_small_lower_sections(snap_compare: Any) -> None:
    """At 80×24, scrolled to what does not fit, decisions and warnings."""
    assert snap_compare(make_app(), press=["3", "n"], terminal_size=SMALL, run_before=still)


def test_fit_embedding_small(snap_compare: Any) -> None:
    """An embedding campaign's fit: batching strategies and shards on the timeline."""
    assert snap_compare(make_app("embedding-7d"), press=["3"], terminal_size=SMALL,
                        run_before=still)


async def _measure_fails(pilot: Any) -> None:
    await pilot.press("4", "m")
    await pilot.app.workers.wait_for_complete()
    await still(pilot)


def test_measure_failure_small(snap_compare: Any) -> None:
    """A measurement that cannot run: the message, the figures still in use."""
    from tests.test_tui_measure import MeasureUnavailable

    app = make_app(measure=fake_measure(MeasureUnavailable("torch is not installed")))
    assert snap_compare(app, terminal_size=SMALL, run_before=_measure_fails)


def test_measure_embedding_small(snap_compare: Any) -> None:
    """Measure on an embedding campaign: its one figure, the throughput, so named."""
    app = make_app("embedding-7d", measure=fake_measure(RuntimeError("unused")))
    assert snap_compare(app, press=["4"], terminal_size=SMALL, run_before=still)


def test_compare_small(snap_compare: Any) -> None:
    """The campaign on other card models at 80×24: configurations card by card."""
    assert snap_compare(make_app(), press=["5"], terminal_size=SMALL, run_before=still)


def test_compare_big(snap_compare: Any) -> None:
    """At 120×36: configurations side by side, one column per card."""
    assert snap_compare(make_app(), press=["5"], terminal_size=BIG, run_before=still)


def test_compare_embedding_small(snap_compare: Any) -> None:
    """An embedding campaign compared: throughput per card, no empty section."""
    assert snap_compare(make_app("embedding-7d"), press=["5"], terminal_size=SMALL,
                        run_before=still)


def test_export_small(snap_compare: Any) -> None:
    """The order form and the plan.toml preview at 80×24; fields show their start."""
    assert snap_compare(make_app(), press=["6"], terminal_size=SMALL, run_before=still)


def test_export_big(snap_compare: Any) -> None:
    """The order form and the plan.toml preview at 120×36."""
    assert snap_compare(make_app(), press=["6"], terminal_size=BIG, run_before=still)


def test_help_small(snap_compare: Any) -> None:
    """The help screen at 80×24: text wrapped to the window, descriptions in a column."""
    assert snap_compare(make_app(), press=["f1"], terminal_size=SMALL, run_before=still)


def test_help_big(snap_compare: Any) -> None:
    """The help screen at 120×36."""
    assert snap_compare(make_app(), press=["f1"], terminal_size=BIG, run_before=still)


async def _overwrite(pilot: Any) -> None:
    await pilot.press("6", "w")
    await pilot.pause()
    assert (Path(pilot.app.out_dir) / "plan.toml").exists()
    await pilot.press("w")
    await still(pilot)


def test_confirm_overwrite(snap_compare: Any, tmp_path: Path,
                           monkeypatch: Any) -> None:
    """Writing over existing files asks first (after a first write, whose note shows)."""
    monkeypatch.chdir(tmp_path)  # a relative folder keeps the picture free of temp paths
    assert snap_compare(make_app(out_dir="plans"), terminal_size=SMALL, run_before=_overwrite)


async def _advise(pilot: Any) -> None:
    await pilot.press("7")
    await pilot.pause()
    await pilot.app.workers.wait_for_complete()
    await still(pilot)


def test_advise_small(snap_compare: Any) -> None:
    """Advise at 80×24: the orders that fit ablation-7d, fewest card-hours first (no price
    known), the first one selected."""
    assert snap_compare(make_app(), terminal_size=SMALL, run_before=_advise)


def test_advise_big(snap_compare: Any) -> None:
    """Advise at 120×36: every column of the headless table, as many rows as fit, the
    Adopt row and the legend in the first view."""
    assert snap_compare(make_app(), terminal_size=BIG, run_before=_advise)


async def _advise_frontier(pilot: Any) -> None:
    await _advise(pilot)
    await pilot.press("f")
    await still(pilot)


def test_advise_frontier_small(snap_compare: Any) -> None:
    """Advise at 80×24 after `f`: the smallest count per card and window, and the closest
    orders with what they would need."""
    assert snap_compare(make_app(), terminal_size=SMALL, run_before=_advise_frontier)


def test_measure_big(snap_compare: Any) -> None:
    """Measure at 120×36, idle: the figures in use, the key that starts it."""
    app = make_app(measure=fake_measure(RuntimeError("unused")))
    assert snap_compare(app, press=["4"], terminal_size=BIG, run_before=still)


async def _timeline_zoomed(pilot: Any) -> None:
    pilot.app.edit("campaign", cards=8)
    await pilot.press("3", "t", "plus", "plus", "right")
    await still(pilot)


def test_fit_timeline_30_days_8_cards_zoomed_small(snap_compare: Any) -> None:
    """30 days × 8 cards at 80×24, the timeline zoomed in twice, the cursor on a run: its
    id, hours and figures under the legend of codes."""
    assert snap_compare(make_app("ablation-30d"), terminal_size=SMALL,
                        run_before=_timeline_zoomed)

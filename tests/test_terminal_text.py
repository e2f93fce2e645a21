"""One rule for text that reaches a terminal: a control character in a printed value (a
figure's device, a name, a note) is refused as the input loads, in one line naming the
file and the field; a command, which may hold one, is shown escaped by `run --dry-run`; the
planner and the plan reader agree, so a plan that works on the
planning machine works on the rented one."""

from __future__ import annotations

import copy
import tomllib
from pathlib import Path
from typing import Any

import pytest
import tomli_w

from planner.cli.main import main
from planner.errors import InputError
from planner.planfile.export import read_plan, write_exports
from planner.planfile.order import Order
from planner.spec.printable import shown
from tests.run_fixtures import harness as h

ESC = "\x1b[2J\x1b]0;owned\x07"


def _preset(tmp_path: Path, change: Any) -> Path:
    data = copy.deepcopy(h.preset(seeds=(0,), robustness=[]))
    change(data)
    path = tmp_path / "preset.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def _set_device(d: dict[str, Any]) -> None:
    d["ablation"]["baseline"]["step_time_s"] = {"value": 1.0, "source": "measured",
                                                "device": f"H100{ESC}"}


def _set_note(d: dict[str, Any]) -> None:
    d["ablation"]["baseline"]["peak_memory_gib"]["note"] = "fits\rOK"


def _set_factor(d: dict[str, Any]) -> None:
    d["ablation"]["baseline"]["factors"]["crash"] = f"never{ESC}"


def _set_contact(d: dict[str, Any]) -> None:
    d["order"]["contact"] = {"name": f"me{ESC}", "email": "me@example.invalid"}


CASES = {"device": (_set_device, "ablation.baseline.step_time_s.device"),
         "note": (_set_note, "ablation.baseline.peak_memory_gib.note"),
         "factor": (_set_factor, "ablation.baseline.factors.crash"),
         "contact": (_set_contact, "order.contact.name")}


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_control_character_in_a_printed_value_is_refused_at_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        case: str) -> None:
    change, field = CASES[case]
    preset = _preset(tmp_path, change)
    rc = main(["--preset", str(preset), "--out", str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1, err
    assert f"{preset}: {field}: holds a control character" in err, err
    assert "\x1b" not in out + err and "\r" not in out + err
    assert not (tmp_path / "out").exists()


def test_a_measurements_device_with_an_escape_is_refused_at_load(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from planner.figures.measurements import measurements_toml
    from planner.spec.loading import load_preset
    from tests.test_measure_plan import measurements

    path = tmp_path / "m.toml"
    path.write_text(measurements_toml(measurements(load_preset("ablation-7d")[0])).replace(
        'name = "', f'name = "{ESC.encode("unicode_escape").decode()}', 1))
    rc = main(["--preset", "ablation-7d", "--measurements", str(path), "--out",
               str(tmp_path / "out")])
    out, err = capsys.readouterr()
    assert rc == 2 and err.count("\n") == 1, err
    assert str(path) in err and "control character" in err, err
    assert "\x1b" not in out + err and not (tmp_path / "out").exists()


def test_the_planner_never_writes_what_the_reader_refuses(tmp_path: Path) -> None:
    """A value that slipped past the inputs (built in code here) stops the export."""
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    plan = read_plan(plan_path)
    figures = plan.assumptions.figures
    bad = figures[0].model_copy(update={"config": f"baseline{ESC}"})
    odd = plan.model_copy(update={"assumptions": plan.assumptions.model_copy(
        update={"figures": [bad, *figures[1:]]})})
    out = tmp_path / "out"
    order = Order.model_validate(tomllib.loads(
        (plan_path.parent / "order.toml").read_text())["order"])
    with pytest.raises(InputError) as caught:
        write_exports(out, odd, order)
    assert "assumptions.figures[0].config" in str(caught.value)
    assert str(out / "plan.toml") in str(caught.value)
    assert not out.exists()


def test_a_hand_edited_device_is_refused_by_the_reader(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan_path = h.make_plan(tmp_path / "p", h.preset(seeds=(0,), robustness=[]))
    text = plan_path.read_text()
    plan_path.write_text(text.replace('device = ""', 'device = "H100\\u001b[2J"', 1))
    for argv in (["status", str(plan_path)], ["run", "--dry-run", str(plan_path)]):
        assert main(argv) == 2
        out, err = capsys.readouterr()
        assert "device: holds a control character" in err and "\x1b" not in out + err


def test_a_command_holding_an_escape_is_shown_escaped_by_a_dry_run(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = h.preset(seeds=(0,), robustness=[], variants={})
    data["ablation"]["command"] += " --title '\x1b[2J'"
    plan_path = h.make_plan(tmp_path / "p", data)
    assert main(["run", "--dry-run", str(plan_path)]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "--title '\\x1b[2J'" in out, out


def test_shown_escapes_what_a_terminal_acts_on() -> None:
    assert shown("a\x1b[2Jb\r\n\t\x9b\x7f") == "a\\x1b[2Jb\\r\\n\\t\\x9b\\x7f"
    assert shown("plain text, é") == "plain text, é"


def test_an_error_quoting_an_escape_prints_it_escaped(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / f"no{ESC}such.toml"
    assert main(["status", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b" in err and err.count("\n") == 1

"""`reference = "hf"`: any transformers architecture measured from its config, with random
weights and nothing downloaded. Fake-tensor peaks follow the config's fields (key-value
heads, layers); bad configs and factors are one line naming the file and the field, exit 2;
an encoder config measures an embedding campaign; the CUDA path on the fake allocator."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import tomli_w

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from planner.campaign import plan_campaign  # noqa: E402
from planner.cli.main import main  # noqa: E402
from planner.errors import InputError  # noqa: E402
from planner.figures.measured import require_spec  # noqa: E402
from planner.figures.measurements import load_measurements  # noqa: E402
from planner.measure import measure_preset  # noqa: E402
from planner.measure.jobs import jobs  # noqa: E402
from planner.measure.memory import fake_estimate  # noqa: E402
from planner.measure.runner import run  # noqa: E402
from planner.spec.catalog import load_catalog  # noqa: E402
from planner.spec.loading import load_preset  # noqa: E402
from tests.conftest import CREATED, shipped  # noqa: E402
from tests.fake_cuda import FakeCuda  # noqa: E402

LLAMA = {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
         "num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 2,
         "vocab_size": 128, "max_position_embeddings": 256, "rope_theta": 10000.0,
         "architectures": ["LlamaForCausalLM"], "torch_dtype": "bfloat16"}
BERT = {"model_type": "bert", "hidden_size": 64, "intermediate_size": 128,
        "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 128,
        "max_position_embeddings": 128}
MEASURE = {"reference": "hf", "config": "llama.json", "seq_len": 32, "dtype": "bf16",
           "warmup_steps": 0, "steps": 1}
ENTERED = {"step_time_s": {"value": 3.6, "source": "entered"},
           "peak_memory_gib": {"value": 31.5, "source": "entered"}}


@pytest.fixture(autouse=True)
def _offline(monkeypatch: pytest.MonkeyPatch) -> None:
    # Nothing may be downloaded: the hub is off and any connection attempt fails the test.
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a connection was attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)


def write_preset(folder: Path, variants: dict[str, dict[str, Any]], *,
                 baseline: dict[str, Any] | None = None, json_text: str | None = None,
                 **measure: Any) -> Path:
    """A training preset in `folder` whose measurement is the tiny Llama of llama.json
    (`json_text` replaces that file's text; `config=` in `measure` names another)."""
    data = shipped("ablation-3d")
    a = data["ablation"]
    del a["model"]
    a.update(micro_batch=2, accumulation=1, effective_batch=2,
             measure={k: v for k, v in {**MEASURE, **measure}.items() if v is not None})
    a["baseline"]["factors"] = (baseline if baseline is not None else
                                {"num_key_value_heads": 2, "num_hidden_layers": 2})
    a["variants"] = [{"name": name, "changes": changes, **ENTERED}
                     for name, changes in variants.items()]
    (folder / "llama.json").write_text(json_text if json_text is not None else json.dumps(LLAMA))
    path = folder / "p.toml"
    path.write_text(tomli_w.dumps(data))
    return path


def fake_peaks(path: Path) -> dict[str, Any]:
    """Each configuration's fake-tensor estimate at micro-batch 2."""
    preset, source = load_preset(str(path))
    return {j.name: fake_estimate(j.build, 2, "bf16")
            for j in jobs(preset, require_spec(preset, source), source)}


# --- the fake-tensor path ---------------------------------------------------------------------

def test_more_key_value_heads_and_layers_take_more_memory_checkpointing_less(
        tmp_path: Path) -> None:
    path = write_preset(tmp_path, {"kv8": {"num_key_value_heads": 8},
                                   "deeper": {"num_hidden_layers": 4},
                                   "ckpt": {"gradient_checkpointing": True}},
                        baseline={"num_key_value_heads": 2, "num_hidden_layers": 2,
                                  "gradient_checkpointing": False})
    est = fake_peaks(path)
    base, kv8, deeper = est["baseline"], est["kv8"], est["deeper"]
    assert est["ckpt"].activations < base.activations and est["ckpt"].peak < base.peak
    assert base.peak < kv8.peak and base.activations < kv8.activations
    # k and v projections of 64 → 8 heads × 8 instead of 2 × 8, in each of 2 layers, fp32.
    assert kv8.weights - base.weights == 2 * 2 * 64 * (64 - 16) * 4
    assert deeper.peak > base.peak and deeper.weights > base.weights
    # Adam: two fp32 states per weight; gradients as large as the weights.
    assert base.gradients == pytest.approx(base.weights, rel=0.01)
    assert base.optimizer == pytest.approx(2 * base.weights, rel=0.01)


def test_a_model_folder_relative_to_the_preset_and_factors_that_do_not_change_the_step(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text(json.dumps(LLAMA))
    path = write_preset(tmp_path, {"lr-low": {"lr": 1e-4}}, baseline={"lr": 3e-4},
                        config="model", ignore_factors=["lr"])
    (tmp_path / "llama.json").unlink()
    monkeypatch.chdir("/")   # relative to the preset's folder, not the working directory
    preset, source = load_preset(str(path))
    todo = jobs(preset, require_spec(preset, source), source)
    assert todo[0].key == todo[1].key and todo[1].ignored == ["lr"]


def test_an_inline_config_is_a_model_type_and_its_fields(tmp_path: Path) -> None:
    inline = {k: v for k, v in LLAMA.items() if k not in ("architectures", "torch_dtype")}
    path = write_preset(tmp_path, {"kv8": {"num_key_value_heads": 8}}, config=inline)
    (tmp_path / "llama.json").unlink()
    est = fake_peaks(path)
    assert est["kv8"].weights - est["baseline"].weights == 2 * 2 * 64 * (64 - 16) * 4


# --- bad input: one line naming the file and the field, exit 2 ----------------------------------

def _link(tmp_path: Path) -> dict[str, Any]:
    outside = tmp_path.parent / f"{tmp_path.name}-outside.json"
    outside.write_text(json.dumps(LLAMA))
    (tmp_path / "linked.json").symlink_to(outside)
    return {"measure": {"config": "linked.json"}}


CASES: list[tuple[str, Any, list[str]]] = [
    ("unknown factor", lambda t: {"variants": {"kv": {"num_kv_heads": 8}},
                                  "baseline": {"num_kv_heads": 2}},
     ["p.toml: ablation.baseline.factors.num_kv_heads: not a field of LlamaConfig",
      "ignore_factors"]),
    ("unknown config field", lambda t: {"json": {**LLAMA, "num_kv_heads": 2}},
     ["llama.json: num_kv_heads: not a field of LlamaConfig"]),
    ("missing config.json", lambda t: {"measure": {"config": "configs/missing.json"}},
     ["p.toml: ablation.measure.config:", "configs/missing.json: file not found"]),
    ("a link", _link, ["p.toml: ablation.measure.config:", "linked.json is a link"]),
    ("outside the folder", lambda t: {"measure": {"config": "../llama.json"}},
     ["p.toml: ablation.measure.config:", "without `..`"]),
    ("absolute", lambda t: {"measure": {"config": "/etc/passwd"}},
     ["p.toml: ablation.measure.config:", "inside the preset's folder"]),
    ("not JSON", lambda t: {"json": "{"},
     ["llama.json: not JSON"]),
    ("unknown model type", lambda t: {"json": {**LLAMA, "model_type": "lama"}},
     ["llama.json: model_type: 'lama' is not a model type", "did you mean llama"]),
    ("remote code", lambda t: {"json": {**LLAMA, "auto_map": {"AutoConfig": "x.Y"}}},
     ["llama.json: auto_map: names remote code, which is never run"]),
    ("a value of the wrong type", lambda t: {"json": {**LLAMA, "num_hidden_layers": "two"}},
     ["llama.json: num_hidden_layers: transformers refuses it"]),
    ("an unknown activation", lambda t: {"variants": {"act": {"hidden_act": "nope"}},
                                         "baseline": {"hidden_act": "silu"}},
     ["p.toml: ablation.variants[0].changes.hidden_act: 'nope' is not an activation"]),
    ("a kernel from the hub", lambda t: {"variants": {"k": {"attn_implementation": "a/b"}},
                                         "baseline": {"attn_implementation": "sdpa"}},
     ["p.toml: ablation.variants[0].changes.attn_implementation: must name a kernel"]),
    ("a sequence beyond the positions", lambda t: {"measure": {"seq_len": 512}},
     ["llama.json: max_position_embeddings: the model takes at most 256 positions"]),
    ("a reference size", lambda t: {"measure": {"d_model": 64}},
     ["p.toml: ablation.measure.d_model: reference = \"hf\" takes its sizes from `config`"]),
    ("no config", lambda t: {"measure": {"config": None}},
     ["p.toml: ablation.measure.config: give `config` exactly when reference = \"hf\""]),
    ("an inline table's unknown field", lambda t: {"measure": {"config": {**BERT, "foo": 1}}},
     ["p.toml: ablation.measure.config.foo: not a field of BertConfig"]),
]


@pytest.mark.parametrize(("case", "make", "parts"), CASES, ids=[c[0] for c in CASES])
def test_bad_configs_and_factors_are_one_line_exit_2(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, make: Any,
        parts: list[str]) -> None:
    spec = make(tmp_path)
    text = spec.get("json")
    path = write_preset(tmp_path, spec.get("variants", {}), baseline=spec.get("baseline"),
                        json_text=text if isinstance(text, str) or text is None
                        else json.dumps(text), **spec.get("measure", {}))
    out = tmp_path / "m.toml"
    assert main(["measure", "--preset", str(path), "--out", str(out), "--device", "cpu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("campaign-planner: error: "), err
    for part in parts:
        assert part in err, err
    assert not out.exists()


def test_a_kernel_this_machine_lacks_cannot_be_measured_here(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import importlib.util

    if importlib.util.find_spec("flash_attn") is not None:
        pytest.skip("flash-attn is installed here")
    path = write_preset(tmp_path, {}, baseline={"attn_implementation": "flash_attention_2"})
    out = tmp_path / "m.toml"
    assert main(["measure", "--preset", str(path), "--out", str(out), "--device", "cpu"]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot measure here" in err and "flash_attention_2" in err
    assert not out.exists()


# --- an embedding campaign's encoder ------------------------------------------------------------

def test_an_encoder_config_measures_an_embedding_campaign(tmp_path: Path) -> None:
    from transformers import AutoConfig, AutoModel

    data = shipped("embedding-3d")
    data["embedding"].update(measure={"reference": "hf", "config": "bert.json",
                                      "dtype": "fp32", "warmup_steps": 0, "steps": 1},
                             truncation_tokens=64, token_budget=512)
    (tmp_path / "bert.json").write_text(json.dumps(BERT))
    (tmp_path / "e.toml").write_text(tomli_w.dumps(data))
    preset, source = load_preset(str(tmp_path / "e.toml"))
    m = measure_preset(preset, load_catalog(), threads=1, source=source)
    (cm,) = m.configs
    assert cm.config == "embedding" and cm.step_time is not None
    assert (cm.micro_batch, cm.tokens_per_step) == (8, 512)   # the longest texts, 512 // 64
    fields = {k: v for k, v in BERT.items() if k != "model_type"}
    expected = AutoModel.from_config(AutoConfig.for_model("bert", **fields)).num_parameters()
    assert cm.params == expected
    assert cm.memory.method == "fake-tensor" and cm.memory.gradients_gib == 0
    assert cm.memory.weights_gib == pytest.approx(expected * 4 / 2**30, rel=0.01)
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED)
    assert "measured on CPU: memory used, throughput kept" in plan.warnings
    assert plan.assumptions.measurements is not None
    assert plan.assumptions.measurements.workload == "transformers config bert.json"


# --- the CUDA path, on the fake allocator -----------------------------------------------------

def test_on_cuda_time_and_peak_come_from_the_card(tmp_path: Path) -> None:
    path = write_preset(tmp_path, {"kv8": {"num_key_value_heads": 8},
                                   "ckpt": {"gradient_checkpointing": True}},
                        baseline={"num_key_value_heads": 2, "gradient_checkpointing": False},
                        steps=2, dtype="fp32")
    preset, source = load_preset(str(path))
    fake = FakeCuda(scale=1000)
    with fake.tracking():
        m = run(preset, load_catalog(), steps=None, progress=None, cancel=None, device="cpu",
                threads=1, source=source, command="", backend=fake.backend())
    by = {c.config: c for c in m.configs}
    assert m.device.kind == "cuda" and m.device.card == "a6000"
    for c in by.values():
        assert c.memory.method == "cuda" and c.step_time is not None
        assert c.step_time.steps == 2 and c.batch is not None and c.batch.method == "cuda"
    # Weights, gradients and Adam's states of the larger k and v projections alone: 196 MB
    # at this scale, beyond anything the cache's fragmentation adds.
    kv8, base = by["kv8"].memory.allocated_gib, by["baseline"].memory.allocated_gib
    assert kv8 is not None and base is not None and kv8 > base
    # Checkpointing recomputes the forward pass: counted in the hardware FLOPs only.
    ckpt, base = by["ckpt"], by["baseline"]
    assert ckpt.model_flops_per_step == pytest.approx(base.flops_per_step)
    assert ckpt.flops_per_step > base.flops_per_step


# --- nothing downloaded, nothing heavy loaded where it is not needed ---------------------------

def test_the_command_end_to_end_offline_then_plan(tmp_path: Path) -> None:
    path = write_preset(tmp_path, {"kv8": {"num_key_value_heads": 8}})
    out = tmp_path / "m.toml"
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HOME": str(tmp_path / "hf-home")}
    proc = subprocess.run([sys.executable, "-m", "planner", "measure", "--preset", str(path),
                           "--out", str(out), "--device", "cpu", "--threads", "1"],
                          capture_output=True, text=True, env=env, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "hf-home").exists()   # no cache made, nothing fetched
    m = load_measurements(out)
    by = {c.config: c for c in m.configs}
    assert by["kv8"].memory.peak_gib > by["baseline"].memory.peak_gib
    preset, source = load_preset(str(path))
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED,
                         source=source)
    made = plan.assumptions.measurements
    assert made is not None and made.workload == "transformers config llama.json"
    # The file's content is part of what was measured: a changed config is refused.
    (tmp_path / "llama.json").write_text(json.dumps({**LLAMA, "num_hidden_layers": 3}))
    with pytest.raises(InputError, match="it has changed since") as info:
        plan_campaign(preset, load_catalog(), measurements=m, created=CREATED, source=source)
    assert info.value.field == "workload.spec.config_sha256" and info.value.file == str(out)
    (tmp_path / "llama.json").unlink()
    plan = plan_campaign(preset, load_catalog(), measurements=m, created=CREATED,
                         source=source)
    assert any("cannot be read to check" in w for w in plan.warnings)


HEADLESS = """
import sys
from planner.cli.main import main
rc = main(["--preset", sys.argv[1], "--out", sys.argv[2]])
print(rc, sorted(m for m in sys.modules if m.split(".")[0] in {"torch", "transformers"}))
"""


def test_a_headless_plan_of_an_hf_preset_loads_neither_torch_nor_transformers(
        tmp_path: Path) -> None:
    path = write_preset(tmp_path, {"kv8": {"num_key_value_heads": 8}})
    proc = subprocess.run([sys.executable, "-c", HEADLESS, str(path), str(tmp_path / "o")],
                          capture_output=True, text=True, cwd=tmp_path)
    assert proc.stdout.strip().splitlines()[-1] == "0 []", proc.stderr


def test_the_readme_example_is_a_valid_measurement_section(tmp_path: Path) -> None:
    import re
    import tomllib

    from tests.readme_examples import page_with
    marker = "## Any transformers architecture, from its config"
    section = page_with(marker).split(marker, 1)[1]
    block = re.search(r"```toml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    example = tomllib.loads(block[1])["ablation"]
    data = shipped("ablation-3d")
    del data["ablation"]["model"]
    data["ablation"].update(measure=example["measure"], baseline={**example["baseline"],
                                                                   **ENTERED},
                            variants=[{**v, **ENTERED} for v in example["variants"]])
    (tmp_path / "llama-1b.json").write_text(json.dumps(
        {**LLAMA, "num_key_value_heads": 8, "max_position_embeddings": 4096}))
    (tmp_path / "p.toml").write_text(tomli_w.dumps(data))
    preset, source = load_preset(str(tmp_path / "p.toml"))
    base, gqa = jobs(preset, require_spec(preset, source), source)
    assert base.key != gqa.key and base.ignored == gqa.ignored == ["lr"]
    assert base.seq_len == 2048

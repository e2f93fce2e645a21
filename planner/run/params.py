"""What makes a run the run it is: its parameters, their fingerprint, the manifest kept
beside its checkpoints, and what changed between two plans."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from planner.errors import InputError
from planner.planfile import text as plan_text
from planner.planfile.plan import Plan, Run
from planner.tomlio import read_toml, write_atomic

PARAMETERS = ("id", "kind", "variant", "factor", "value", "seed", "version", "shard", "steps",
              "micro_batch", "accumulation", "effective_batch", "checkpoint_dir",
              "export_name", "command", "resume", "depends_on")
"""Run fields that decide what a run computes. Its cards, times and retry limit do not:
a run may resume on another card, at another hour."""

MANIFEST_HEADER = (
    "# campaign-planner run manifest: the parameters this run's checkpoints were made with.\n"
    "# A relaunch with other parameters is refused; move this folder away to start afresh.\n\n")


def _digest(data: Any) -> str:
    canon = json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canon.encode()).hexdigest()


def run_parameters(run: Run) -> dict[str, Any]:
    """The run's parameters (absent optional values left out), plus how many cards it uses."""
    # Each parameter is a plain str, int, float or bool, already as JSON has it: read
    # directly, without a dump of the whole run (every run of a plan is fingerprinted).
    values = run.__dict__
    out = {k: values[k] for k in PARAMETERS if values.get(k) is not None}
    out["cards"] = len(run.card)
    return out


def run_fingerprint(run: Run) -> str:
    """SHA-256 over the run's parameters."""
    return _digest(run_parameters(run))


def plan_fingerprint(plan: Plan) -> str:
    """SHA-256 over the whole plan except the moment it was written, so exporting the same
    preset again does not count as a change."""
    data = plan.model_dump(mode="json")
    data["campaign"].pop("created", None)
    return _digest(data)


def manifest_path(workdir: Path, run: Run) -> Path:
    """`<checkpoint_dir>/<run id>.manifest.toml`: named by run, because robustness
    evaluations share their trained run's folder and embedding shards share a version's."""
    return workdir / run.checkpoint_dir / f"{run.id}.manifest.toml"


def manifest_text(run: Run) -> str:
    """The manifest's exact text (the SLURM export writes the same bytes): what tomli-w
    writes for it, written directly (a SLURM export writes one per run)."""
    params = run_parameters(run)
    text = plan_text.string
    lines = [f"run_id = {text(run.id)}", f"fingerprint = {text(_digest(params))}", "",
             "[parameters]",
             *(f"{plan_text.key(k)} = {plan_text.literal(v)}" for k, v in params.items())]
    return MANIFEST_HEADER + "\n".join(lines) + "\n"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "…"


def describe_changes(old: dict[str, Any], new: dict[str, Any]) -> str:
    """`steps 60 → 80, command` — fields that differ, with short values shown."""
    parts = []
    for key in sorted(set(old) | set(new)):
        a, b = old.get(key), new.get(key)
        if a != b:
            long = len(json.dumps(a)) > 40 or len(json.dumps(b)) > 40
            parts.append(key if long else f"{key} {_short(a)} → {_short(b)}")
    return ", ".join(parts)


def check_manifest(workdir: Path, run: Run) -> str | None:
    """Why relaunching `run` here must be refused, or None when it may go ahead."""
    path = manifest_path(workdir, run)
    if not path.exists():
        resume = workdir / run.resume
        # A training run's own checkpoint without a manifest was made by something else:
        # resuming from it could mix configurations, starting over would discard it.
        if run.kind == "train" and resume.exists():
            return (f"run {run.id}: {resume} exists but {path.name} does not, so its "
                    f"parameters cannot be checked; move {workdir / run.checkpoint_dir} "
                    f"away to start the run afresh")
        return None
    try:
        doc = read_toml(path)
    except InputError as exc:
        return f"run {run.id}: manifest unreadable ({exc}); cannot check its parameters"
    if doc.get("fingerprint") == run_fingerprint(run):
        return None
    changed = describe_changes(doc.get("parameters", {}), run_parameters(run))
    return (f"run {run.id}: its checkpoints in {workdir / run.checkpoint_dir} were made with "
            f"other parameters ({changed or 'fingerprint differs'}); refusing to mix them or "
            f"restart from zero: restore the plan, or move that folder away to start afresh")


def write_manifest(workdir: Path, run: Run) -> None:
    """Write the run's manifest once, before its first launch."""
    path = manifest_path(workdir, run)
    if not path.exists():
        write_atomic(path, manifest_text(run), force=True)


def _names(ids: list[str], limit: int = 4) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def plan_changes(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> str:
    """Runs added, removed and changed between two plans' run parameters, in words."""
    added = [r for r in new if r not in old]
    removed = [r for r in old if r not in new]
    changed = [f"{r} ({describe_changes(old[r], new[r])})" for r in new
               if r in old and old[r] != new[r]]
    parts = []
    if added:
        parts.append(f"{len(added)} run{'s' * (len(added) > 1)} added: {_names(added)}")
    if removed:
        parts.append(f"{len(removed)} removed: {_names(removed)}")
    if changed:
        parts.append(f"{len(changed)} changed: {_names(changed, 2)}")
    return "; ".join(parts) or "no run's parameters changed (times, cards or other fields did)"

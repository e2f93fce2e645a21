"""A plan's launch as a SkyPilot task and as a dstack run configuration (YAML)."""

from __future__ import annotations

import math
import shlex
from typing import Any

import yaml

from planner.planfile.plan import Plan, Run
from planner.run.cloud import MOUNT, Launch, resource_name

PER_RUN_NOTE = (
    "each run once holds only in part with --per-run: a run's done record, on the bucket, "
    "keeps a finished run from running again when its job is started later; its lock does "
    "not (locks on object-storage mounts are not reliable), so never launch one run's job "
    "twice at once")


class _Dumper(yaml.SafeDumper):
    """YAML as people write it for these tools: a script as a literal block."""


def _text(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _text)


def dump(data: dict[str, Any]) -> str:
    """The YAML text of a task or run configuration, keys in the order given."""
    return yaml.dump(data, Dumper=_Dumper, sort_keys=False, width=100, allow_unicode=True)


def _autostop() -> dict[str, Any]:
    # The plan's end is the machine's end: idle 10 minutes after `run` returns, it goes down.
    return {"idle_minutes": 10, "down": True}


def sky_task(launch: Launch, sky_name: str, *, workdir: str, bucket: str, spot: bool,
             store: str | None) -> dict[str, Any]:
    """The SkyPilot task running the whole plan on one machine: the plan folder synced as
    its workdir, the campaign's storage at MOUNT for the journal and checkpoints."""
    mount: dict[str, Any] = {"name": bucket, "mode": "MOUNT_CACHED"}
    if store:
        mount["store"] = store
    return {
        "name": launch.campaign_id,
        "workdir": workdir,
        "resources": {"accelerators": {sky_name: launch.cards}, "disk_size": launch.disk_gb,
                      "use_spot": spot, "autostop": _autostop()},
        "envs": dict(launch.env),
        "file_mounts": {MOUNT: mount},
        "setup": "\n".join([launch.setup[0], *launch.window_start(), *launch.setup[1:]])
        + "\n",
        "run": launch.run_script(),
    }


def groups(plan: Plan) -> list[list[Run]]:
    """The plan's runs as per-run jobs: each training run with the evaluations that depend
    on it (they need its checkpoint, on the same machine), any other run alone."""
    by_parent: dict[str, list[Run]] = {}
    for r in plan.runs:
        if r.depends_on:
            by_parent.setdefault(r.depends_on, []).append(r)
    ids = {r.id for r in plan.runs}
    return [[r, *by_parent.get(r.id, [])] for r in plan.runs
            if not r.depends_on or r.depends_on not in ids]


def sky_run_task(launch: Launch, sky_name: str, runs: list[Run], *, disk_gb: int,
                 workdir: str, bucket: str, spot: bool, store: str | None) -> dict[str, Any]:
    """One managed job: a run (and its evaluations) on a machine of its own. Its journal is
    the machine's; checkpoints and exports live on the bucket, linked into that working
    directory as the plan's checkpoint and export roots."""
    cards = max(len(r.card) for r in runs)
    local = "$HOME/campaign-work"
    roots = sorted({r.checkpoint_dir.split("/", 1)[0] for r in runs}
                   | {r.export_name.split("/", 1)[0] for r in runs})
    links = [f"mkdir -p {shlex.quote(f'{MOUNT}/{root}')} && ln -sfn "
             f"{shlex.quote(f'{MOUNT}/{root}')} \"{local}\"/{shlex.quote(root)}"
             for root in roots if not root.startswith("/")]
    only = ",".join(r.id for r in runs)
    script = "\n".join([
        "set -euo pipefail", f"mkdir -p \"{local}\"", *links,
        f"campaign-planner run plan.toml --workdir \"{local}\" --only {shlex.quote(only)} "
        f"--cards {','.join(str(c) for c in range(cards))}",
    ]) + "\n"
    task = sky_task(launch, sky_name, workdir=workdir, bucket=bucket, spot=spot, store=store)
    task["name"] = runs[0].id
    task["resources"]["accelerators"] = {sky_name: cards}
    task["resources"]["disk_size"] = disk_gb
    task["envs"]["CAMPAIGN_RUN_ID"] = runs[0].id
    task["setup"] = "\n".join(launch.setup) + "\n"  # a run's job keeps no window
    task["run"] = script
    return task


def _duration(hours: float) -> str:
    return f"{math.ceil(hours * 60)}m"


def dstack_run(launch: Launch, dstack_name: str, *, folder: str, volume: str, spot: bool,
               max_price: float | None) -> dict[str, Any]:
    """The dstack task running the whole plan: the plan folder copied in, the campaign's
    network volume at MOUNT, stopped by dstack when the window ends."""
    gib = launch.card.memory_gib
    first = [launch.setup[0], *launch.window_start()]
    config: dict[str, Any] = {
        "type": "task",
        "name": resource_name(launch.campaign_id, 41),  # dstack's rule for a run's name
        # The long form: a `:` in the folder's path would split the short `local:path` one.
        "files": [{"local_path": folder, "path": "/workflow/plan"}],
        "working_dir": "/workflow/plan",
        "env": [f"{k}={v}" for k, v in launch.env.items()],
        "python": "3.11",
        # One script: dstack joins its commands with `&&`, and a multi-line command's later
        # lines would run even after a failed setup line before it.
        "commands": ["\n".join([*first, *launch.setup[1:],
                                *(line for line in launch.run_script().splitlines()
                                  if line not in first)]) + "\n"],
        "resources": {"gpu": f"{dstack_name}:{gib:g}GB:{launch.cards}",
                      "disk": f"{launch.disk_gb}GB.."},
        "volumes": [{"name": volume, "path": MOUNT}],
        "spot_policy": "spot" if spot else "on-demand",
        # dstack's own limit, a few minutes past the window: `run` stops first, gracefully.
        "max_duration": _duration(launch.window_hours + 0.25),
    }
    price = max_price if max_price is not None else launch.price_per_hour
    if price is not None:
        config["max_price"] = price
    return config

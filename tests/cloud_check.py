"""Load SkyPilot tasks and dstack run configurations with the tools' own parsers and print
what they read, as JSON: run by the interpreter of the environment that has SkyPilot and
dstack (`.venv-cloud`, kept apart: SkyPilot pins a click older than the dev tools need).

Usage: python tests/cloud_check.py sky FILE... | dstack FILE...
"""

from __future__ import annotations

import json
import sys


def sky_facts(path: str) -> dict[str, object]:
    import sky

    task = sky.Task.from_yaml(path)
    (res,) = list(task.resources)
    return {"name": task.name, "accelerators": res.accelerators, "disk_size": res.disk_size,
            "use_spot": res.use_spot, "workdir": task.workdir, "envs": dict(task.envs),
            "mounts": {k: v.name for k, v in task.storage_mounts.items()},
            "setup": task.setup, "run": task.run}


def dstack_facts(path: str) -> dict[str, object]:
    import yaml
    from dstack.api import Task

    with open(path, encoding="utf-8") as f:
        config = Task.model_validate(yaml.safe_load(f))
    gpu = config.resources.gpu
    return {"name": config.name, "gpu_names": gpu.name, "count": [gpu.count.min, gpu.count.max],
            "memory_gb": float(gpu.memory.min), "max_duration": config.max_duration,
            "max_price": config.max_price, "spot_policy": config.spot_policy.value,
            "env": dict(config.env), "commands": config.commands,
            "volumes": [[v.name, v.path] for v in config.volumes],
            "files": [[f.local_path, f.path] for f in config.files]}


if __name__ == "__main__":
    tool, *files = sys.argv[1:]
    read = sky_facts if tool == "sky" else dstack_facts
    print(json.dumps({f: read(f) for f in files}))

"""The stack preflight behind `campaign-planner check`: can this torch run on the target
card?

Kernel compatibility (NVIDIA's rules for cubins and PTX): machine code (SASS) built for
`sm_XY` runs on any card of the same major version X with minor ≥ Y (sm_86 code runs on an
sm_89 Ada card), never across a major version (nothing built for 8.x runs on 9.0). PTX
(`compute_XY`) is compiled by the driver at first launch for any card with a higher or
equal capability: it runs, after a slow start. Arch-specific targets (`sm_90a`) run only on
that exact capability.

Exit codes: 0 every check passed; 1 a check failed (no kernels for the card, the order's
CUDA or PyTorch too old, a kernel test failed); 2 bad input; 3 nothing failed but some
checks could not run here (no torch, a CPU build, no GPU, or a GPU that is not the card).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from planner.spec.catalog import Card

Status = Literal["ok", "warn", "fail", "skip"]
_ARCH = re.compile(r"^(sm|compute)_(\d+)(\d)([a-z]?)$")


@dataclass
class Finding:
    """One line of the report."""

    status: Status
    what: str
    detail: str


@dataclass
class Report:
    """Every finding, and the exit code they add up to."""

    findings: list[Finding] = field(default_factory=list)

    def add(self, status: Status, what: str, detail: str) -> None:
        """Record a finding."""
        self.findings.append(Finding(status, what, detail))

    @property
    def code(self) -> int:
        """0 all passed, 1 a failure, 3 something could not be checked."""
        states = {f.status for f in self.findings}
        return 1 if "fail" in states else 3 if "skip" in states else 0


def parse_arch(tag: str) -> tuple[str, int, int, str] | None:
    """`sm_86` → ("sm", 8, 6, ""); `compute_90` → ("compute", 9, 0, ""); else None."""
    m = _ARCH.match(tag)
    return (m[1], int(m[2]), int(m[3]), m[4]) if m else None


def kernel_support(arch_list: Sequence[str], compute_capability: str
                   ) -> tuple[Literal["exact", "binary", "ptx", "none"], str]:
    """Whether a torch build with `arch_list` has kernels for a card, and how."""
    major, minor = (int(x) for x in compute_capability.split("."))
    parsed = [p for p in map(parse_arch, arch_list) if p]
    sm = "sm_" + compute_capability.replace(".", "")
    if any(k == "sm" and (hi, lo) == (major, minor) for k, hi, lo, _ in parsed):
        return "exact", f"{sm} machine code is in the build"
    same_major = sorted(lo for k, hi, lo, suffix in parsed
                        if k == "sm" and hi == major and lo < minor and not suffix)
    if same_major:
        low = f"sm_{major}{same_major[-1]}"
        return "binary", (f"{low} machine code runs on {sm} (binary-compatible within major "
                          f"version {major})")
    ptx = sorted((hi, lo) for k, hi, lo, suffix in parsed
                 if k == "compute" and (hi, lo) <= (major, minor) and not suffix)
    if ptx:
        hi, lo = ptx[-1]
        return "ptx", (f"only PTX compute_{hi}{lo}: the driver compiles it for {sm} at first "
                       "launch (slow start, possibly slower kernels)")
    return "none", f"no machine code or PTX in this build runs on {sm}"


SM_FIRST_CUDA = {"8.0": "11.0", "8.6": "11.1", "8.9": "11.8", "9.0": "11.8"}
"""First CUDA toolkit that builds machine code for each capability (see the catalog)."""


def older_sm_fallback(compute_capability: str, cuda: str) -> str:
    """The newest lower capability of the same major version that `cuda` builds for, whose
    machine code runs on this card (e.g. sm_86 code on an sm_89 card with CUDA 11.1–11.7);
    "" when there is none."""
    major, minor = (int(x) for x in compute_capability.split("."))
    best = ""
    for cc, first in SM_FIRST_CUDA.items():
        hi, lo = (int(x) for x in cc.split("."))
        if hi == major and lo < minor and _version(first) <= _version(cuda):
            best = "sm_" + cc.replace(".", "")
    return best


def cuda_finding(card: Card, cuda: str) -> tuple[Status, str] | None:
    """What the order's CUDA version means for `card`: nothing, a warning (it builds only an
    older, binary-compatible architecture), or a failure."""
    if _version(cuda) >= _version(card.min_cuda):
        return None
    fallback = older_sm_fallback(card.compute_capability, cuda)
    if fallback:
        return "warn", (f"the order's CUDA {cuda} cannot build {card.sm} code (that needs "
                        f"CUDA >= {card.min_cuda}), but its {fallback} code runs on {card.sm} "
                        "(binary-compatible within a major version): no FP8, and kernels "
                        "tuned for the older architecture")
    return "fail", (f"the order's CUDA {cuda} cannot target {card.sm}; it needs CUDA >= "
                    f"{card.min_cuda}")


def _version(v: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", v)[:3])


def torch_facts() -> dict[str, Any] | None:
    """What the installed torch says about itself and the visible GPUs; None without torch."""
    from planner.measure.base import torch_available

    if not torch_available():
        return None
    import torch

    devices = []
    if torch.cuda.is_available():
        for i in range(torch.cuda.device_count()):
            cc = torch.cuda.get_device_capability(i)
            devices.append({"name": torch.cuda.get_device_name(i), "cc": f"{cc[0]}.{cc[1]}"})
    cudnn = torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None
    return {"torch": torch.__version__, "cuda": torch.version.cuda or "",
            "cudnn": cudnn, "arch_list": list(torch.cuda.get_arch_list()), "devices": devices}


def kernel_test(index: int, dtype: str) -> str:
    """Run a matrix product and attention on a GPU in `dtype`; "" when they work."""
    import torch
    import torch.nn.functional as F

    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(dtype, torch.float32)
    try:
        dev = torch.device("cuda", index)
        a = torch.randn(256, 256, device=dev, dtype=dt)
        (a @ a).sum().item()
        q = torch.randn(2, 4, 128, 64, device=dev, dtype=dt)
        F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().item()
        torch.cuda.synchronize(dev)
    except Exception as exc:  # any failure here is the finding itself
        return f"{type(exc).__name__}: {exc}".splitlines()[0]
    return ""


def check_stack(cards: dict[str, Card], facts: dict[str, Any] | None, *,
                order: tuple[str, str] | None = None, dtype: str = "bf16",
                run_kernels: bool = True) -> Report:
    """The preflight for `cards` (catalog key → card) given `torch_facts()`; `order` is the
    (CUDA, PyTorch) versions the order asks for."""
    r = Report()
    if facts is None:
        r.add("skip", "torch", "not installed: kernels, devices and versions cannot be checked "
                               "here (pip install torch)")
    else:
        build = f"CUDA {facts['cuda']}" if facts["cuda"] else "CPU build, no CUDA"
        cudnn = f", cuDNN {facts['cudnn']}" if facts["cudnn"] else ""
        r.add("ok", "torch", f"{facts['torch']} ({build}{cudnn})")
        archs = facts["arch_list"]
        r.add("ok" if archs else "skip", "arch list",
              " ".join(archs) if archs else "empty: a CPU build has no GPU kernels to check")
        if facts["devices"]:
            for i, d in enumerate(facts["devices"]):
                r.add("ok", f"GPU {i}", f"{d['name']} (sm_{d['cc'].replace('.', '')})")
        else:
            r.add("skip", "GPU", "none visible: no kernel can be launched here")
    for key, card in cards.items():
        what = f"{key} ({card.sm})"
        if order is not None:
            cuda, pytorch = order
            found = cuda_finding(card, cuda)
            if found is not None:
                r.add(found[0], what, found[1])
            if _version(pytorch)[:2] < _version(card.min_pytorch)[:2]:
                r.add("fail", what, f"the order's PyTorch {pytorch} has no kernels for "
                                    f"{card.sm}; it needs >= {card.min_pytorch}")
        if facts is None or not facts["arch_list"]:
            r.add("skip", what, f"{card.name}: needs CUDA >= {card.min_cuda}, PyTorch >= "
                                f"{card.min_pytorch}; kernels not checkable with this torch")
            continue
        kind, detail = kernel_support(facts["arch_list"], card.compute_capability)
        statuses: dict[str, Status] = {"exact": "ok", "binary": "ok", "ptx": "warn",
                                       "none": "fail"}
        status = statuses[kind]
        r.add(status, what, f"{card.name}: {detail}")
        match = [i for i, d in enumerate(facts["devices"]) if d["cc"] == card.compute_capability]
        if not match:
            r.add("skip", what, "no GPU of this compute capability here: kernel launch not "
                                "tested")
        elif run_kernels:
            err = kernel_test(match[0], dtype)
            r.add("fail" if err else "ok", what,
                  f"{dtype} matmul and attention on GPU {match[0]}: {err or 'ran'}")
    if facts is not None and order is not None and facts["torch"]:
        here, wanted = _version(facts["torch"])[:2], _version(order[1])[:2]
        if here != wanted:
            r.add("warn", "versions", f"this torch is {facts['torch']}, the order asks for "
                  f"PyTorch {order[1]}: measure and test with the version you will run")
    return r


def render(r: Report) -> str:
    """The report as text, with what the exit code means."""
    mark = {"ok": "ok  ", "warn": "warn", "fail": "FAIL", "skip": "n/a "}
    # The column as wide as the longest key (`rtx6000ada (sm_89)`), so details line up.
    width = max([18, *(len(f.what) for f in r.findings)])
    lines = [f"  {mark[f.status]}  {f.what:<{width}} {f.detail}" for f in r.findings]
    verdict = {0: "every check passed", 1: "a check failed",
               3: "nothing failed, but some checks could not run here (n/a)"}[r.code]
    return "\n".join([*lines, "", f"Result: {verdict} (exit {r.code})"])

"""Headless Chromium for the report's checks: the DOM after the page's scripts ran, a
screenshot, and every request the page made (from Chromium's own network log)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import NamedTuple

NOWHERE = "127.0.0.1:9"
"""A proxy that accepts nothing: a request that slipped past the log still goes nowhere."""


def chromium() -> str | None:
    """The Chromium binary, or None where it is not installed."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class Opened(NamedTuple):
    """What one headless load of a page gave."""

    dom: str
    """The document after its scripts ran (`--dump-dom`)."""
    requests: list[str]
    """URLs the page itself asked for (the browser's own update checks left out)."""


def _flags(profile: Path) -> list[str]:
    return ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
            f"--proxy-server={NOWHERE}", "--disable-background-networking",
            "--disable-component-update", "--disable-sync", "--no-first-run",
            "--disable-extensions", "--disable-default-apps", f"--user-data-dir={profile}"]


def page_requests(netlog: Path) -> list[str]:
    """URLs requested on behalf of a file:// page, from a `--log-net-log` file: the page's
    requests are those whose network isolation key is the page's own site."""
    data = json.loads(netlog.read_text(encoding="utf-8", errors="replace") or "{}")
    names = {v: k for k, v in data.get("constants", {}).get("logEventTypes", {}).items()}
    out = []
    for event in data.get("events", []):
        params = event.get("params") or {}
        if names.get(event.get("type")) != "URL_REQUEST_START_JOB" or "url" not in params:
            continue
        key = str(params.get("network_isolation_key", ""))
        if key.startswith("file://") and not str(params["url"]).startswith("file:"):
            out.append(str(params["url"]))
    return out


def open_page(page: Path, work: Path, *, budget_ms: int = 10000,
              timeout_s: float = 120) -> Opened:
    """Load `page` headless, let its scripts run, and return the DOM and its requests."""
    binary = chromium()
    assert binary is not None, "chromium is not installed"
    netlog = work / "netlog.json"
    proc = subprocess.run(
        [binary, *_flags(work / "profile"), f"--virtual-time-budget={budget_ms}",
         f"--log-net-log={netlog}", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=timeout_s, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return Opened(proc.stdout, page_requests(netlog))


def screenshot(page: Path, png: Path, width: int, height: int, *, budget_ms: int = 10000,
               timeout_s: float = 120) -> None:
    """A `width` × `height` screenshot of `page` once its scripts ran."""
    binary = chromium()
    assert binary is not None, "chromium is not installed"
    with tempfile.TemporaryDirectory() as profile:
        proc = subprocess.run(
            [binary, *_flags(Path(profile)), f"--virtual-time-budget={budget_ms}",
             f"--window-size={width},{height}", f"--screenshot={png.resolve()}",
             page.resolve().as_uri()],
            capture_output=True, text=True, timeout=timeout_s, check=False)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]


def png_size(png: Path) -> tuple[int, int]:
    """Width and height from a PNG's header."""
    head = png.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n", f"{png} is not a PNG"
    return int.from_bytes(head[16:20], "big"), int.from_bytes(head[20:24], "big")

"""Drive a target with wrk (C, negligible client overhead) and parse its throughput and latency."""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass

from peers import LOADGEN_CORE, pinned

_UNITS = {"us": 1e-3, "ms": 1.0, "s": 1000.0}


@dataclass
class Result:
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    errors: int  # non-2xx answers plus socket errors
    requests: int = 0  # answered in the run
    seconds: float = 0.0  # the run's actual duration


def available() -> str | None:
    """None when wrk can run, else how to get it."""
    if shutil.which("wrk"):
        return None
    return "wrk not found: install it with `apt-get install wrk` (Debian) and rerun"


def _ms(text: str) -> float:
    match = re.fullmatch(r"([\d.]+)(us|ms|s)", text)
    if not match:
        return float("nan")
    return float(match.group(1)) * _UNITS[match.group(2)]


def run(url: str, script: str, seconds: float, connections: int = 16, threads: int = 1) -> Result:
    """Run wrk against `url` for `seconds` with the given Lua script."""
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as f:
        f.write(script)
        path = f.name
    try:
        done = subprocess.run([*pinned(LOADGEN_CORE), "wrk", f"-t{threads}", f"-c{connections}", f"-d{max(1, round(seconds))}s", "--latency", "--timeout", "10s", "-s", path,
                               url + "/"], capture_output=True, text=True, timeout=seconds + 60)
    finally:
        os.unlink(path)
    out = done.stdout
    rps = re.search(r"Requests/sec:\s+([\d.]+)", out)
    p50 = re.search(r"^\s+50%\s+(\S+)", out, re.M)
    p99 = re.search(r"^\s+99%\s+(\S+)", out, re.M)
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    sock = re.search(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)", out)
    errors = int(non2xx.group(1)) if non2xx else 0
    if sock:
        errors += sum(int(g) for g in sock.groups())
    total = re.search(r"(\d+) requests in ([\d.]+)(us|ms|s|m)\b", out)
    if not rps:
        raise RuntimeError(f"wrk failed: {done.stderr or out}")
    requests = int(total.group(1)) if total else 0
    seconds = float(total.group(2)) * {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}[total.group(3)] if total else 0.0
    return Result(float(rps.group(1)), _ms(p50.group(1)) if p50 else float("nan"),
                  _ms(p99.group(1)) if p99 else float("nan"), errors, requests, seconds)

"""The container's health check: probe the port the running dynalocal was configured with.

`python -m dynalocal.cli.healthcheck [--pid N]` reads the command line of process N (PID 1,
the container's main process, by default), parses it with dynalocal's own options and the
environment (so `-port 8001`, `--port 8001` and `DYNALOCAL_PORT=8001` all count), and asks
`GET /_dynalocal/health` on that port. Exit status 0 = healthy, 1 = not.
"""
from __future__ import annotations

import argparse
import os
import sys
import urllib.request
from pathlib import Path


def server_arguments(cmdline: list[str]) -> list[str]:
    """The arguments given to dynalocal in a process command line (`dynalocal ...` or `-m dynalocal ...`)."""
    for i, part in enumerate(cmdline):
        if os.path.basename(part) == "dynalocal":
            return cmdline[i + 1:]
    return []


def configured_port(pid: int) -> int:
    """The port process `pid` serves on, per its command line and the environment."""
    # the health check runs every few seconds in a container: the option table loads only when asked
    from dynalocal.cli.arguments import parse_args

    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        raw = b""
    cmdline = [part.decode(errors="replace") for part in raw.split(b"\0") if part]
    return parse_args(server_arguments(cmdline)).port


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dynalocal.cli.healthcheck")
    parser.add_argument("--pid", type=int, default=1, help="the dynalocal process (default 1, a container's)")
    parser.add_argument("--timeout", type=float, default=2.0)
    args = parser.parse_args(argv)
    url = f"http://127.0.0.1:{configured_port(args.pid)}/_dynalocal/health"
    try:
        with urllib.request.urlopen(url, timeout=args.timeout) as resp:
            return 0 if resp.status == 200 else 1
    except OSError as err:
        print(f"unhealthy: {url}: {err}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())

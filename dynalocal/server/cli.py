"""The `dynalocal` command: parse options, build the app, serve it with uvicorn."""
from __future__ import annotations

import argparse
import logging

from .context import Context, Settings


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dynalocal", description="A DynamoDB-compatible local server.")
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8000, help="port to listen on (default 8000)")
    parser.add_argument("--log-level", default="info", choices=["critical", "error", "warning", "info", "debug"])
    parser.add_argument("--throttling", default="enforce", choices=["enforce", "report", "off"],
                        help="per-partition throttling: refuse (enforce), only record and log (report), or off")
    parser.add_argument("--ttl-interval", type=float, default=1.0,
                        help="seconds between sweeps that delete expired TTL items (default 1)")
    parser.add_argument("--burst-seconds", type=float, default=300.0,
                        help="seconds of unused partition capacity kept as burst (default 300)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    import uvicorn

    from .app import create_app

    logging.basicConfig(level=args.log_level.upper(), format="%(asctime)s %(name)s %(levelname)s %(message)s")
    ctx = Context(settings=Settings(host=args.host, port=args.port, throttling=args.throttling,
                                   burst_seconds=args.burst_seconds, ttl_interval=args.ttl_interval))
    uvicorn.run(create_app(ctx), host=args.host, port=args.port, log_level=args.log_level,
                access_log=False, loop="uvloop", http="httptools", lifespan="on")

"""Start a dynalocal server in this process (or use $DDB_ENDPOINT) for the examples."""
from __future__ import annotations

import socket
import threading
import time

import boto3
import uvicorn
from botocore.config import Config

from dynalocal.server.app import create_app
from dynalocal.server.context import Context, Settings


class SimulatedClock:
    """Time that moves only when the example says so, so its figures do not depend on machine speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def endpoint(burst_seconds: float = 300.0, clock=None, port: int | None = None) -> str:
    """A fresh in-process server with the given burst window (and clock, if given), on `port` or a free one."""
    if port is None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    ctx = Context(settings=Settings(port=port, burst_seconds=burst_seconds))
    if clock is not None:
        ctx.clock = clock
    server = uvicorn.Server(uvicorn.Config(create_app(ctx), host="127.0.0.1", port=port, log_level="error"))
    threading.Thread(target=server.run, daemon=True).start()
    while not server.started:
        time.sleep(0.01)
    return f"http://127.0.0.1:{port}"


def client(url: str):
    """A client that reports throttling instead of retrying it away."""
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x", config=Config(retries={"total_max_attempts": 1, "mode": "standard"}))

"""Start a dynalocal server in this process (or use $DDB_ENDPOINT) for the examples."""
from __future__ import annotations

import threading

import boto3
from botocore.config import Config

from dynalocal.app import create_app
from dynalocal.engine.context import Context, Settings
from dynalocal.http.plugins import install
from dynalocal.http.serve import HttpServer


class SimulatedClock:
    """Time that moves only when the example says so, so its figures do not depend on machine speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def endpoint(burst_seconds: float = 300.0, clock=None, port: int = 0) -> str:
    """A fresh in-process server with the given burst window (and clock, if given), on `port` (0: a free one)."""
    ctx = Context(settings=Settings(burst_seconds=burst_seconds))
    if clock is not None:
        ctx.clock = clock
    server = HttpServer(create_app(ctx), "127.0.0.1", port)  # port 0: a free one, known once started
    install(server)  # authentication, CORS, compression: as the dynalocal command serves
    threading.Thread(target=server.run, kwargs={"signals": False}, daemon=True).start()
    server.started.wait(10)
    if server.error is not None:
        raise server.error
    ctx.settings.port = server.port
    return f"http://127.0.0.1:{server.port}"


def client(url: str):
    """A client that reports throttling instead of retrying it away."""
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x", config=Config(retries={"total_max_attempts": 1, "mode": "standard"}))

"""Start a dynalocal server in this process (or use $DDB_ENDPOINT) for the examples."""
from __future__ import annotations

import boto3
from botocore.config import Config

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.testing import LocalServer


class SimulatedClock:
    """Time that moves only when the example says so, so its figures do not depend on machine speed."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def endpoint(burst_seconds: float | None = None, clock=None, port: int = 0) -> str:
    """A fresh in-process server (dynalocal.testing.LocalServer: built as the dynalocal command builds it) with
    the given burst window and clock, if given, on `port` (0: a free one); it runs until the example exits."""
    ctx = Context(settings=Settings() if burst_seconds is None else Settings(burst_seconds=burst_seconds))
    if clock is not None:
        ctx.clock = clock
    return LocalServer(ctx=ctx, port=port).start().url


def client(url: str):
    """A client that reports throttling instead of retrying it away."""
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="x",
                        aws_secret_access_key="x", config=Config(retries={"total_max_attempts": 1, "mode": "standard"}))

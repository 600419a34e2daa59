"""Shared fixtures: a real dynalocal server (dynalocal.testing.LocalServer) on a free port, and boto3 clients
pointed at it."""
from __future__ import annotations

import json
import socket
import urllib.error
import urllib.request
import uuid

import pytest

from dynalocal.engine.context import Context
from dynalocal.testing import LocalServer

# Names tests address the server by (`Host: x` in raw-socket tests, a DynamoDB-like name in the health
# check test): allowed as --allowed-hosts would, since the loopback bind's Host check refuses other names.
TEST_HOSTS = ("x", "dynamodb.local")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class FakeClock:
    """An injectable clock (capacity's monotonic one by default) that moves only when a test moves it."""

    start = 1000.0

    def __init__(self) -> None:
        self.now = self.start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


class WallClock(FakeClock):
    """A FakeClock in epoch seconds, for the wall clock (TTL, streams, transient statuses)."""

    start = 1_700_000_000.0


def capacity_args(provisioned: tuple[int, int] | None = None, partitions: int | None = None,
                  classic: bool = False) -> dict:
    """CreateTable members for a capacity test: provisioned (read, write) or on demand, plus the
    `dynalocal:partitions` and `dynalocal:capacity-model=classic` tags when asked for."""
    args: dict = {"ProvisionedThroughput": {"ReadCapacityUnits": provisioned[0], "WriteCapacityUnits": provisioned[1]}} \
        if provisioned else {"BillingMode": "PAY_PER_REQUEST"}
    tags = []
    if partitions:
        tags.append({"Key": "dynalocal:partitions", "Value": str(partitions)})
    if classic:
        tags.append({"Key": "dynalocal:capacity-model", "Value": "classic"})
    if tags:
        args["Tags"] = tags
    return args


class LiveServer(LocalServer):
    """The suite's server: dynalocal.testing.LocalServer (built as the CLI builds it) that also answers the
    Host names the tests use (TEST_HOSTS), with `raw()` for hand-made requests. `ctx`: a Context of the
    test's own (settings, clocks); else `settings` are Settings fields."""

    def __init__(self, ctx: Context | None = None, **settings) -> None:
        if ctx is None:
            settings.setdefault("allowed_hosts", TEST_HOSTS)
        elif not ctx.settings.allowed_hosts:
            ctx.settings.allowed_hosts = TEST_HOSTS
        super().__init__(ctx=ctx, **settings)

    def raw(self, target: str | None, body, content_type: str = "application/x-amz-json-1.0", method: str = "POST",
            path: str = "/"):
        """Send a hand-made request; return (status, headers, body bytes)."""
        data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type,
                   "Authorization": "AWS4-HMAC-SHA256 Credential=test/20250101/us-east-1/dynamodb/aws4_request, "
                                    "SignedHeaders=host, Signature=00"}
        if target:
            headers["X-Amz-Target"] = target
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, resp.headers, resp.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read()


@pytest.fixture(scope="session")
def server():
    with LiveServer() as live:
        yield live


@pytest.fixture(scope="session")
def ddb(server):
    return server.client()


@pytest.fixture(scope="session")
def resource(server):
    return server.resource()


@pytest.fixture
def make_table(ddb):
    """Create a table (waiting until ACTIVE); delete it after the test."""
    created = []

    def make(key_schema, attrs, **kwargs):
        name = f"t-{uuid.uuid4().hex[:12]}"
        keys = [{"AttributeName": n, "KeyType": t} for n, t in key_schema]
        defs = [{"AttributeName": n, "AttributeType": t} for n, t in attrs]
        if "ProvisionedThroughput" not in kwargs:
            kwargs.setdefault("BillingMode", "PAY_PER_REQUEST")
        ddb.create_table(TableName=name, KeySchema=keys, AttributeDefinitions=defs, **kwargs)
        ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.1, "MaxAttempts": 50})
        created.append(name)
        return name

    yield make
    for name in created:
        try:
            ddb.delete_table(TableName=name)
        except Exception:
            pass


# Figures some tests measure (start-up time, fuzz counts...): shown in a section of pytest's own summary,
# never printed among its progress output.
FIGURES: list[str] = []


@pytest.fixture
def figure(request):
    """Record a measured figure, labelled with the test's id, for the summary's "figures" section."""
    return lambda text: FIGURES.append(f"{request.node.nodeid}: {text}")


def pytest_terminal_summary(terminalreporter):
    if FIGURES:
        terminalreporter.section("figures")
        for line in FIGURES:
            terminalreporter.write_line(line)

"""A dynalocal server inside the test process, and the capacity assertions tests make against it.

`LocalServer` starts the real server (serve.HttpServer on a free loopback port, in a thread) in well
under a second, so a test session can have one for free. Everything that reads or changes the
server's state (reset, seed, report) runs on the server's own event loop, never beside it.
Used by the pytest plugin (`dynalocal.pytest_plugin`); usable on its own in any test runner.
"""
from __future__ import annotations

import asyncio
import dataclasses
import inspect
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dynalocal.cli.build import build_server
from dynalocal.config import Settings
from dynalocal.diagnosis import figures
from dynalocal.diagnosis.collect import collect
from dynalocal.diagnosis.engine import TableReport, diagnose
from dynalocal.engine.context import Context
from dynalocal.engine.reset import reset_database
from dynalocal.http.plugins.auth import DEFAULT_REGION, scope_of
from dynalocal.http.serve import HttpServer
from dynalocal.seed.loader import apply_seed, load_seed
from dynalocal.seed.template import Request

if TYPE_CHECKING:
    import boto3

DEFAULT_CREDENTIALS = {"aws_access_key_id": "test", "aws_secret_access_key": "test", "region_name": "us-east-1"}
INSTALL_HINT = "pip install 'dynalocal[pytest]'"


def import_boto3() -> Any:
    """boto3, or a ModuleNotFoundError saying how to get it: boto3 is a dependency of the test
    fixtures (the `pytest` extra), not of the server."""
    try:
        import boto3  # only the clients need it; the server runs without it
    except ImportError as err:
        raise ModuleNotFoundError(f"dynalocal's boto3 clients and pytest fixtures need boto3, which is not "
                                  f"installed: {INSTALL_HINT}", name="boto3") from err
    return boto3


class CapacityAssertionError(AssertionError):
    """A capacity assertion failed; the message carries the report's verdict."""


class LocalServer:
    """The real dynalocal server on 127.0.0.1, started in a background thread of this process.

    `settings` are Settings fields (None: the default), or give `ctx`, a Context of your own (e.g.
    with a test clock). It listens on loopback whatever `host` says, on `port` (0: a free one).
    `init`: seed files, loaded at start and again after each `reset()` (and into each namespace)."""
    def __init__(self, *, init: list[str] | None = None, ctx: Context | None = None, port: int = 0,
                 **settings: Any) -> None:
        self.options = {name: value for name, value in settings.items() if value is not None}
        if ctx is not None and self.options:
            raise ValueError("give LocalServer settings or a ctx (with its settings), not both")
        self.init = list(init or [])
        self.port = port
        self.url = ""
        self.startup_seconds = 0.0
        self.ctx = ctx  # the server's Context (once started, or when given)
        self._own_ctx = ctx  # the caller's Context, reused by every start (else a new one each time)
        self._server: HttpServer | None = None
        self._thread: threading.Thread | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._seed: list[Request] = []
        self._baseline: dict = {}
        self._sessions: dict[str, boto3.session.Session] = {}  # by access key: one Session costs ~0.1 s
        self.access_key = DEFAULT_CREDENTIALS["aws_access_key_id"]
        self.scope = ""  # the catalog prefix of the current namespace's tables (see `namespace`)
        self._namespaces = 0

    @property
    def server(self) -> HttpServer | None:
        """The HttpServer (while running)."""
        return self._server

    # -- life cycle ------------------------------------------------------------------------------

    def start(self, timeout: float = 30.0) -> LocalServer:
        """Serve on a free port; return once it accepts requests."""
        began = time.perf_counter()
        settings = None
        if self._own_ctx is None:
            unknown = set(self.options) - {f.name for f in dataclasses.fields(Settings)}
            if unknown:
                raise ValueError(f"this dynalocal has no setting {', '.join(sorted(unknown))}")
            settings = Settings(**self.options)
        self._server = server = build_server(settings, self._own_ctx, bind=("127.0.0.1", self.port))
        self.ctx = ctx = server.app.ctx
        if self.init:

            self._seed = load_seed(self.init)
            ctx.startup.append(self._apply_seed)
        self._thread = threading.Thread(target=server.run, kwargs={"signals": False}, name="dynalocal", daemon=True)
        self._thread.start()
        if not server.started.wait(timeout) or server.error is not None:
            raise RuntimeError(f"dynalocal did not start: {server.error or 'timed out'}")
        self._loop = server.loop
        self.port = ctx.settings.port = server.port
        self.url = f"http://127.0.0.1:{server.port}"
        self.startup_seconds = time.perf_counter() - began
        return self

    async def _apply_seed(self, account: str | None = None) -> None:
        if self._seed:
            assert self.ctx is not None, "server not started"
            await apply_seed(self.ctx, self._seed, account=account)

    def namespace(self) -> str:
        """Give the clients made from now on tables of their own (needs isolation="account"): a new
        12-digit access key is a new account, whose tables no other namespace sees; seed data is
        loaded into it. Returns the access key."""
        assert self.ctx is not None, "server not started"
        if self.ctx.settings.isolation != "account":
            raise ValueError('namespaces need LocalServer(isolation="account")')

        self._namespaces += 1
        account = f"{100000000000 + self._namespaces:012d}"
        self.access_key, self.scope = account, scope_of("account", DEFAULT_REGION, account)
        self._baseline = {}
        if self._seed:
            self.call(lambda: self._apply_seed(account))
        return account

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            if self._thread is not None:
                self._thread.join(30)
            self._server = None

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- on the server's loop --------------------------------------------------------------------

    def call(self, fn: Callable[[], Any], timeout: float = 60.0) -> Any:
        """Run `fn` (sync or async) on the server's event loop, between requests; return its result."""
        async def run() -> Any:
            result = fn()
            return await result if inspect.isawaitable(result) else result

        assert self._loop is not None, "server not started"
        return asyncio.run_coroutine_threadsafe(run(), self._loop).result(timeout)

    def reset(self) -> int:
        """Drop every table (and its persisted state), then load the seed files again."""
        self._baseline = {}
        ctx = self.ctx
        assert ctx is not None, "server not started"

        async def reset() -> int:
            dropped = await reset_database(ctx)
            await self._apply_seed()
            return dropped

        return self.call(reset)

    def report(self, table: str | None = None) -> list[TableReport]:
        """The diagnosis of every table (or one), as `diagnosis.engine.TableReport`s."""
        scope = self.scope
        ctx = self.ctx
        assert ctx is not None, "server not started"

        def run() -> list[TableReport]:
            figures = collect(ctx, scope + table if table is not None else None)
            mine = [f for f in figures if f.table.startswith(scope)]
            for f in mine:  # tables by the names the test's clients use
                f.table = f.table[len(scope):]
            return diagnose(mine)

        return self.call(run)

    # -- clients ---------------------------------------------------------------------------------

    def session(self) -> boto3.session.Session:
        """The boto3 Session of the current namespace's credentials, made once and reused: a new Session
        costs about 0.1 s (and its first client loads the service model again)."""
        session = self._sessions.get(self.access_key)
        if session is None:
            boto3 = import_boto3()
            session = self._sessions[self.access_key] = boto3.session.Session(
                **{**DEFAULT_CREDENTIALS, "aws_access_key_id": self.access_key})
        return session

    def environment(self) -> dict[str, str]:
        """The standard AWS environment variables that point clients an application builds itself
        (`boto3.client("dynamodb")`) at this server, with the current namespace's credentials."""
        return {"AWS_ENDPOINT_URL_DYNAMODB": self.url, "AWS_ACCESS_KEY_ID": self.access_key,
                "AWS_SECRET_ACCESS_KEY": DEFAULT_CREDENTIALS["aws_secret_access_key"],
                "AWS_DEFAULT_REGION": DEFAULT_CREDENTIALS["region_name"],
                "AWS_REGION": DEFAULT_CREDENTIALS["region_name"]}

    def client(self, **config: Any) -> Any:  # a botocore DynamoDB client (made at run time: no static type)
        from botocore.config import Config

        session = self.session()
        return session.client("dynamodb", endpoint_url=self.url, config=Config(**config) if config else None)

    def resource(self, **config: Any) -> Any:  # a boto3 DynamoDB ServiceResource (made at run time, as above)
        from botocore.config import Config

        session = self.session()
        return session.resource("dynamodb", endpoint_url=self.url, config=Config(**config) if config else None)

    # -- capacity assertions ---------------------------------------------------------------------

    def mark(self) -> None:
        """Start counting for the assertions from now (the plugin marks the start of each test)."""
        self._baseline = {(t.table, m.index, m.direction): (dict(m.throttles), [p.units for p in m.partitions])
                          for t in self.report() for m in t.meters}

    def throttles(self, table: str | None = None, reports: list[TableReport] | None = None,
                  ) -> dict[str, dict[str, int]]:
        """Throttle events by cause per table since the mark (or start); a GSI's own causes are labelled
        with the index (as `TableReport.throttles`). `reports`: this server's report, when already made."""
        out: dict[str, dict[str, int]] = {}
        for t in self.report(table) if reports is None else reports:
            counts: dict[str, int] = {}
            for m in t.meters:
                before = self._baseline.get((t.table, m.index, m.direction), ({}, []))[0]
                for cause, n in m.throttles.items():
                    if n > before.get(cause, 0):
                        label = cause if m.index is None else f"{cause} (index {m.index})"
                        counts[label] = counts.get(label, 0) + n - before.get(cause, 0)
            if counts:
                out[t.table] = counts
        return out

    def assert_no_throttles(self, table: str | None = None) -> None:
        """Fail if any request (of `table`, or of any table) was throttled since the test started,
        refused or would-be (recorded, not refused, under the table's mode): the message says which."""
        thrown = self.throttles(table)
        if thrown:
            verdicts = {t.table: t.verdict.summary for t in self.report(table) if t.table in thrown}
            lines = []
            for name, counts in thrown.items():
                mode = self.table_mode(name)
                kinds = {c: f"would-be: recorded, not refused under {mode}" if would_be(c, mode) else "refused"
                         for c in counts}
                causes = ", ".join(f"{cause} {n} ({kinds[cause]})" for cause, n in counts.items())
                lines.append(f"{name}: {sum(counts.values())} throttled ({causes}); {verdicts[name]}")
            raise CapacityAssertionError("requests were throttled:\n" + "\n".join(lines))

    def table_mode(self, table: str) -> str:
        """A table's throttling mode: its `dynalocal:throttling` tag, else the server's."""
        assert self.ctx is not None, "server not started"
        entry = self.ctx.db.tables.get(table)
        return self.ctx.capacity.mode(entry) if entry is not None else self.ctx.settings.throttling

    def assert_no_hot_partition(self, table: str, max_share: float = 0.5, direction: str | None = None) -> None:
        """Fail if one partition of `table` (or of one of its GSIs) took more than `max_share` of its
        units since the test started (reads and writes judged apart)."""
        reports = self.report(table)
        if not reports:
            raise CapacityAssertionError(f"no table named {table}")
        for m in reports[0].meters:
            if direction is not None and m.direction != direction:
                continue
            before = self._baseline.get((table, m.index, m.direction), (0, []))[1]
            units = [p.units - (before[i] if i < len(before) else 0.0) for i, p in enumerate(m.partitions)]
            total = sum(units)
            if total <= 0:
                continue
            worst = max(range(len(units)), key=units.__getitem__)
            if units[worst] / total > max_share:
                part = m.partitions[worst]
                keys = ", ".join(f"{k.key!r} ({k.units:g} {m.unit})" for k in part.top_keys[:3])
                what = f"index {m.index} of {table}" if m.index else table
                raise CapacityAssertionError(
                    f"{what}: partition {worst} of {len(units)} took {units[worst] / total:.0%} of {m.direction} "
                    f"units (max_share={max_share:.0%}); its busiest keys: {keys}. {reports[0].verdict.summary}")


def would_be(cause: str, mode: str) -> bool:
    """Whether a throttle of this cause (a diagnosis cause name) was only recorded, not refused, under
    this throttling mode: all in report, the capacity-setting ones in keys (see capacity.modes)."""
    base = cause.split(" (index ")[0]
    if base == figures.GSI_BACK_PRESSURE:  # the index's own cause is counted and labelled beside it
        return False
    if mode == "report":
        return True
    return mode == "keys" and base in figures.CAPACITY_CAUSES

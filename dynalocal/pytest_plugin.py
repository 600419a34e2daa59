"""pytest plugin (entry point `pytest11`): a dynalocal server for the session, boto3 fixtures bound to
it, isolation between tests, capacity assertions and an end-of-session capacity summary.

Fixtures: `dynalocal` (the server, see `dynalocal.testing.LocalServer`: `.url`, `.client()`,
`.report()`, `.assert_no_throttles()`, `.assert_no_hot_partition()`), `dynamodb_client`,
`dynamodb_resource` (one boto3 Session reused), `dynalocal_env` (the standard AWS environment variables,
for clients the application builds itself). Under pytest-xdist each worker has its own server and the
controller prints the summary of what the workers recorded. Options (pytest.ini / pyproject.toml
`[tool.pytest.ini_options]`, or the command line): see `OPTIONS`. The server starts only when a test
asks for one of the fixtures. This module imports nothing heavy, since pytest loads it in every
session of an environment that has dynalocal installed.
"""
from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from dynalocal.config import OPTIONS as SERVER_OPTIONS

if TYPE_CHECKING:
    from dynalocal.diagnosis.engine import TableReport
    from dynalocal.testing import LocalServer

# name -> (help, default); each is an ini option `dynalocal_<name>` and a flag `--dynalocal-<name>`.
# An empty value means the server's own default (dynalocal.config.Settings).
OPTIONS = {
    "throttling": ("keys (refuse key-design throttles, record capacity-setting ones as would-be), enforce (refuse "
                   "both, like DynamoDB), report (only record) or off (default: the server's, keys)", ""),
    "capacity_model": ("adaptive (DynamoDB today) or classic (fixed 1/N partition shares)", ""),
    "burst_seconds": ("seconds of unused capacity kept as burst (default: the server's)", ""),
    "data_dir": ("persist the session's tables in this directory (default: in memory)", ""),
    "isolation": ("between tests: reset (drop all tables, reload seed data), namespace (each test its own "
                  "account: its own tables, seed data loaded into it) or none", "reset"),
    "init": ("seed files (JSON or CloudFormation/SAM templates) loaded at start and after each reset", ""),
    "summary": ("the capacity summary at the end of the session: yes (tables that came near a partition's "
                "ceiling or were throttled), all (every table that had traffic) or no", "yes"),
}
ISOLATION = ("reset", "namespace", "none")
NEAR_CEILING = 0.8  # a partition whose peak second reached 80% of what it sustains is worth a summary line
_STATE = pytest.StashKey["_Session"]()
_XDIST_KEY = "dynalocal"  # what a pytest-xdist worker leaves in `config.workeroutput` for the controller


class DynalocalThrottleWarning(pytest.PytestWarning):
    """A test caused would-be throttles: recorded and counted, not refused (see `dynalocal_throttling`)."""


class _Session:
    """The plugin's per-session state: the server (once started) and the per-test findings."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.server: LocalServer | None = None
        self.headers: list[str] = []  # one per server (one per xdist worker): URL, start-up time, mode
        self.lines: list[str] = []  # "test: table line" for the tables worth a line (see `notable`)
        self.quiet = 0  # tables (per test) that had traffic but no line

    def option(self, name: str) -> str:
        value = self.config.getoption(f"dynalocal_{name}")
        if value is None:
            value = self.config.getini(f"dynalocal_{name}")
        return value.strip() if isinstance(value, str) else value

    def start(self) -> LocalServer:
        if self.server is None:
            # pytest loads this plugin in every run; the server only when a test asks for it
            from dynalocal.testing import LocalServer

            isolation = self.option("isolation")
            if isolation not in ISOLATION:
                raise pytest.UsageError(f"dynalocal_isolation must be one of {', '.join(ISOLATION)}")
            base = Path(self.config.inipath).parent if self.config.inipath else self.config.rootpath
            init = [str(base / p) for p in self.option("init").split()]
            data_dir, burst = self.option("data_dir"), self.option("burst_seconds")
            try:
                self.server = LocalServer(throttling=self.option("throttling") or None,
                                          burst_seconds=float(burst) if burst else None,
                                          capacity_model=self.option("capacity_model") or None,
                                          data_dir=str(base / data_dir) if data_dir else None, init=init,
                                          isolation="account" if isolation == "namespace" else None).start()
            except ValueError as err:
                raise pytest.UsageError(f"dynalocal: {err}") from None
            assert self.server.ctx is not None  # set when it started
            # the server's throttle log names the ini option, where a pytest user sets the mode
            self.server.ctx.capacity.where = "dynalocal_throttling = {mode} (pytest.ini)"
            worker = getattr(self.config, "workerinput", {}).get("workerid")
            server, mode = self.server, self.server.ctx.settings.throttling
            self.headers.append(f"{worker + ': ' if worker else ''}server {server.url} started in "
                                f"{server.startup_seconds:.3f} s; throttling {mode}")
        return self.server

    def record(self, test: str, reports: list[TableReport]) -> None:
        """Keep the summary line of each table that had traffic and is worth one; count the others."""
        show_all = self.option("summary").lower() == "all"
        for table in reports:
            if not any(m.units or m.throttles for m in table.meters):
                continue
            if show_all or notable(table):
                from dynalocal.diagnosis.render import summary_line  # only once a server ran (see above)

                self.lines.append(f"{test}: {summary_line(table)}")
            else:
                self.quiet += 1

    def export(self) -> dict[str, Any]:
        """What an xdist worker sends the controller (plain data)."""
        return {"headers": self.headers, "lines": self.lines, "quiet": self.quiet}

    def absorb(self, figures: dict[str, Any]) -> None:
        """Add what an xdist worker recorded."""
        self.headers += figures["headers"]
        self.lines += figures["lines"]
        self.quiet += figures["quiet"]


def notable(table: TableReport) -> bool:
    """True when the table was throttled (or would have been), or one of its partitions (table or GSI)
    peaked at 80% or more of what it sustains: the tables the summary gives a line."""
    for m in table.meters:
        if any(m.throttles.values()):
            return True
        for p in m.partitions:
            limit = min(p.ceiling, p.share_limit) if p.share_limit else p.ceiling
            if limit > 0 and p.peak >= NEAR_CEILING * limit:
                return True
    return False


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynalocal", "dynalocal local DynamoDB server")
    for name, (help_text, default) in OPTIONS.items():
        parser.addini(f"dynalocal_{name}", help_text, default=default)
        group.addoption(f"--dynalocal-{name.replace('_', '-')}", dest=f"dynalocal_{name}", default=None,
                        help=help_text + " (overrides the ini option)")


THROTTLING_MODES = next(o.choices for o in SERVER_OPTIONS if o.field == "throttling")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _Session(config)
    config.addinivalue_line("markers", "dynalocal_throttling(mode): this test's throttling mode (keys, enforce, "
                            "report or off), e.g. enforce to see capacity-setting throttles refused")


def pytest_unconfigure(config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is not None and state.server is not None:
        state.server.stop()


@pytest.fixture(scope="session")
def dynalocal_server(pytestconfig: pytest.Config) -> LocalServer:
    """The session's server (started on first use)."""
    return pytestconfig.stash[_STATE].start()


@pytest.fixture
def dynalocal(request: pytest.FixtureRequest, dynalocal_server: LocalServer) -> Iterator[LocalServer]:
    """The server, for one test: assertions count from the test's start; isolation after it."""
    state: _Session = request.config.stash[_STATE]
    isolation = state.option("isolation")
    if isolation == "namespace":
        dynalocal_server.namespace()
    marker = request.node.get_closest_marker("dynalocal_throttling")
    settings = dynalocal_server.ctx.settings if dynalocal_server.ctx is not None else None
    session_mode = settings.throttling if settings is not None else None
    if marker is not None and settings is not None:
        mode = marker.args[0] if marker.args else marker.kwargs.get("mode", "")
        if mode not in THROTTLING_MODES:
            raise pytest.UsageError(
                f"dynalocal_throttling marker: {mode!r} is not one of {', '.join(THROTTLING_MODES)}")
        settings.throttling = mode  # requests of one test run one at a time: restored below
    dynalocal_server.mark()
    yield dynalocal_server  # teardown below runs whether the test passed or not
    reports = dynalocal_server.report()
    warning = would_be_warning(dynalocal_server, reports)
    if settings is not None and session_mode is not None:
        settings.throttling = session_mode
    if warning:
        request.node.warn(DynalocalThrottleWarning(warning))
    if isolation != "none":  # with `none`, tables live for the session: judged once, at its end
        state.record(request.node.nodeid, reports)
    if isolation == "reset":
        dynalocal_server.reset()


@pytest.fixture
def dynamodb_client(dynalocal: LocalServer) -> Any:  # a botocore client (no static type)
    """A boto3 DynamoDB client bound to the server."""
    return dynalocal.client()


@pytest.fixture
def dynamodb_resource(dynalocal: LocalServer) -> Any:  # a boto3 ServiceResource (no static type)
    """A boto3 DynamoDB service resource bound to the server."""
    return dynalocal.resource()


@pytest.fixture
def dynalocal_env(dynalocal: LocalServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[dict[str, str]]:
    """Point clients the application builds itself (`boto3.client("dynamodb")`) at the server through the
    standard AWS environment variables (endpoint, credentials, region), restored after the test; under
    namespace isolation the credentials are the test's namespace's. Yields the variables set."""
    from dynalocal.testing import import_boto3  # heavy: only once a test asks for a server (module docstring)

    env = dynalocal.environment()
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
                 "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
        monkeypatch.delenv(name, raising=False)  # each would override or void the variables below
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    # boto3's default Session keeps the credentials it first found: use the namespace's (made once). An
    # application without boto3 (another SDK) reads the variables alone.
    with contextlib.suppress(ModuleNotFoundError):
        monkeypatch.setattr(import_boto3(), "DEFAULT_SESSION", dynalocal.session())
    yield env


def would_be_warning(server: LocalServer, reports: list[TableReport]) -> str:
    """The warning for the throttles since the test's start that were recorded but not refused
    (empty when none): table, cause, count, and the fix in pytest.ini terms."""
    assert server.ctx is not None  # started
    from dynalocal.testing import would_be as only_recorded  # loaded already: a server ran (module docstring)

    lines = []
    for table, counts in server.throttles(reports=reports).items():
        mode = server.table_mode(table)  # its dynalocal:throttling tag, else the server's
        would_be = {cause: n for cause, n in counts.items() if only_recorded(cause, mode)}
        if would_be:
            causes = ", ".join(f"{cause} {n}" for cause, n in would_be.items())
            fixes = dict.fromkeys(_fix(cause) for cause in would_be)
            lines.append(f"table {table}: {sum(would_be.values())} requests would have been throttled ({causes}) "
                         f"but were not refused (dynalocal_throttling = {mode}); fix: {'; '.join(fixes)}, or set "
                         f"dynalocal_throttling = enforce in pytest.ini to see them refused")
    return "dynalocal: " + "\n".join(lines) if lines else ""


def _fix(cause: str) -> str:
    """The one-line fix for a throttle cause, in the terms of a table definition."""
    from dynalocal.diagnosis import figures as f  # only once a server ran (module docstring)

    base, _, index = cause.partition(" (index ")
    whose = f"index {index.rstrip(')')}'s" if index else "table's"
    return {f.TABLE_RATE: f"raise the {whose} ReadCapacityUnits/WriteCapacityUnits (or use PAY_PER_REQUEST)",
            f.ON_DEMAND_MAXIMUM: f"raise or remove the {whose} OnDemandThroughput",
            f.ON_DEMAND_SCALING: f"set the {whose} WarmThroughput",
            f.TABLE_QUOTA: "spread the load over more tables",
            f.PARTITION_SHARE: "raise the provisioned capacity, or dynalocal_capacity_model = adaptive",
            }.get(base, "spread the load over more partition-key values (a hot key stays capped)")


def pytest_sessionfinish(session: pytest.Session) -> None:
    state = session.config.stash.get(_STATE, None)
    if state is None:
        return
    if state.server is not None and state.option("isolation") == "none":
        state.record("session", state.server.report())
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: the controller prints the summary
        workeroutput[_XDIST_KEY] = state.export()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object) -> None:  # pytest-xdist's hook: a worker finished
    state = node.config.stash.get(_STATE, None)
    figures = getattr(node, "workeroutput", {}).get(_XDIST_KEY)
    if state is not None and figures:
        state.absorb(figures)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or not state.headers or state.option("summary").lower() in ("no", "false", "0"):
        return
    terminalreporter.section("dynalocal capacity")
    for line in state.headers + state.lines:
        terminalreporter.write_line(line)
    if state.quiet:
        terminalreporter.write_line(
            f"{state.quiet} more table{'s' if state.quiet > 1 else ''} had traffic with no throttle and no "
            f"partition near its ceiling (dynalocal_summary = all lists them)")
    elif not state.lines:
        terminalreporter.write_line("no table traffic")

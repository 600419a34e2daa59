"""pytest plugin (entry point `pytest11`): a dynalocal server for the session, boto3 fixtures bound to
it, isolation between tests, capacity assertions and an end-of-session capacity summary.

Fixtures: `dynalocal` (the server, see `dynalocal.testing.LocalServer`: `.url`, `.client()`,
`.report()`, `.assert_no_throttles()`, `.assert_no_hot_partition()`), `dynamodb_client`,
`dynamodb_resource`. Options (pytest.ini / pyproject.toml `[tool.pytest.ini_options]`, or the
command line): see `OPTIONS`. The server starts only when a test asks for one of the fixtures.
This module imports nothing heavy, since pytest loads it in every session of an environment
that has dynalocal installed.
"""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

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
    "summary": ("print the capacity summary at the end of the session: yes or no", "yes"),
}
ISOLATION = ("reset", "namespace", "none")
_STATE = pytest.StashKey["_Session"]()


class _Session:
    """The plugin's per-session state: the server (once started) and the per-test findings."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.server: LocalServer | None = None
        self.findings: list[tuple[str, TableReport]] = []  # (test id, TableReport) of tables that had traffic

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
        return self.server


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("dynalocal", "dynalocal local DynamoDB server")
    for name, (help_text, default) in OPTIONS.items():
        parser.addini(f"dynalocal_{name}", help_text, default=default)
        group.addoption(f"--dynalocal-{name.replace('_', '-')}", dest=f"dynalocal_{name}", default=None,
                        help=help_text + " (overrides the ini option)")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_STATE] = _Session(config)


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
    if state.option("isolation") == "namespace":
        dynalocal_server.namespace()
    dynalocal_server.mark()
    yield dynalocal_server
    state.findings += [(request.node.nodeid, t) for t in dynalocal_server.report()
                       if any(m.units or m.throttles for m in t.meters)]
    if state.option("isolation") == "reset":
        dynalocal_server.reset()


@pytest.fixture
def dynamodb_client(dynalocal: LocalServer) -> Any:  # a botocore client (no static type)
    """A boto3 DynamoDB client bound to the server."""
    return dynalocal.client()


@pytest.fixture
def dynamodb_resource(dynalocal: LocalServer) -> Any:  # a boto3 ServiceResource (no static type)
    """A boto3 DynamoDB service resource bound to the server."""
    return dynalocal.resource()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, exitstatus: int,
                            config: pytest.Config) -> None:
    state = config.stash.get(_STATE, None)
    if state is None or state.server is None or state.option("summary").lower() in ("no", "false", "0"):
        return
    from dynalocal.diagnosis.render import summary_line  # only when a server ran (see above)

    server = state.server
    assert server.ctx is not None  # set when it started
    terminalreporter.section("dynalocal capacity")
    terminalreporter.write_line(f"server {server.url} started in {server.startup_seconds:.3f} s; "
                                f"throttling {server.ctx.settings.throttling}")
    findings = state.findings
    if state.option("isolation") == "none":  # tables live for the session: judge them once, at its end
        findings = [("session", t) for t in server.report() if any(m.units or m.throttles for m in t.meters)]
    if not findings:
        terminalreporter.write_line("no table traffic")
    for test, table in findings:
        terminalreporter.write_line(f"{test}: {summary_line(table)}")

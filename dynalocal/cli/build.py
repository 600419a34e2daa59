"""The one way a server is put together from Settings, so the `dynalocal` command, the test harness
(dynalocal.testing), the examples and the benchmarks all serve the same thing.

It lives in cli/ because it joins the layers below it (http, seed, engine); nothing below imports it.
"""
from __future__ import annotations

from collections.abc import Callable

from dynalocal.app import create_app
from dynalocal.config import Settings
from dynalocal.engine.backups.startup import resume_backups
from dynalocal.engine.context import Context
from dynalocal.http.durability import STARTUP_ERRORS, Durability
from dynalocal.http.plugins import install
from dynalocal.http.serve import HttpServer


class ConfigError(Exception):
    """A setting the server cannot start with (the message names the option)."""


def build_server(settings: Settings | None = None, ctx: Context | None = None, *,
                 bind: tuple[str, int] | None = None, plugins: bool = True, load_later: bool = False) -> HttpServer:
    """An HttpServer, not yet started, serving `settings` (or `ctx`: a Context of the caller's, e.g. with a
    test clock, whose settings are used).

    With `data_dir` the journal is opened (recovering the directory) unless `ctx` has one; `init` seed
    files are parsed now and loaded at start. Listens on `bind` (host, port), by default the
    settings' host and port (port 0: a free one). `plugins`: authentication, isolation, CORS and
    compression, as the command serves (off only to measure the HTTP layer without them). `load_later`:
    the data directory is recovered once the server listens (it answers "loading" meanwhile: the command's
    way), and a ConfigError then stops it (StartupFailed, caused by the ConfigError).
    """
    if ctx is None:
        ctx = Context(settings=Settings() if settings is None else settings)
    settings = ctx.settings
    load = None
    if settings.data_dir is not None and ctx.journal is None:
        load = _loader(ctx)
        if not load_later:
            load()
    if settings.init:
        # seed files (and PyYAML) load only with --init
        from dynalocal.seed.loader import seed_hook
        from dynalocal.seed.template import SeedError  # (as above)

        try:
            ctx.startup.append(seed_hook(ctx, list(settings.init)))
        except SeedError as err:
            raise ConfigError(f"cannot use --init {err}") from err
    host, port = (settings.host, settings.port) if bind is None else bind
    server = HttpServer(create_app(ctx), host, port)
    if plugins:
        install(server)
    if load_later:
        server.load = load
    return server


def _loader(ctx: Context) -> Callable[[], None]:
    """Recover the data directory into ctx (a ConfigError naming the option if it cannot be used)."""

    def load() -> None:
        try:
            Durability.open(ctx)
        except STARTUP_ERRORS as err:
            raise ConfigError(f"cannot use --data-dir {ctx.settings.data_dir}: {err}") from err
        resume_backups(ctx)  # the backup catalogue and PITR histories kept beside the log

    return load

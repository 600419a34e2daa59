"""dynalocal's server: listens, runs one `protocol.HttpProtocol` per connection, stops gracefully.

`HttpServer.run()` serves on its own event loop (uvloop when installed) until SIGTERM or
SIGINT (or `stop()` from another thread): it then stops accepting, lets every connection
finish the requests it has received (answers say `connection: close`; idle connections close
at once), waits up to `shutdown_timeout` for them, and finally stops the TTL sweeper and
closes the journal (final snapshot, log synced and closed). A second signal skips the wait.
With `load` set (the command with --data-dir), the port is opened first and `load` (recovery) runs
in a thread while `http.loading` answers every request with 503 "loading"; the start-up hooks
follow it.
"""
from __future__ import annotations

import asyncio
import logging
import signal
import threading
from collections.abc import Callable

from dynalocal.http.app import DynamoApp
from dynalocal.http.connection import Connection
from dynalocal.http.exchange import Hooks
from dynalocal.http.hosts import HostPolicy
from dynalocal.http.loading import loading_gate
from dynalocal.http.messages import DefaultHeaders
from dynalocal.http.protocol import HttpProtocol

log = logging.getLogger("dynalocal")
TICK = 1.0  # seconds between refreshes of the date header and the coarse clock


class StartupFailed(Exception):
    """A start-up hook (Context.startup, e.g. --init seed data) failed; the server did not start."""


def new_event_loop() -> asyncio.AbstractEventLoop:
    try:
        import uvloop
    except ImportError:  # uvloop is optional (uvicorn[standard] brings it); asyncio's loop works too
        return asyncio.new_event_loop()
    return uvloop.new_event_loop()


class HttpServer:
    """Serves a DynamoApp over HTTP/1.1 on host:port (port 0 picks a free one: see `.port` once started).

    Host and port default to the app's settings, which also give the timeouts and the allowed Host names."""

    def __init__(self, app: DynamoApp, host: str | None = None, port: int | None = None) -> None:
        settings = app.ctx.settings
        self.app = app
        self.asgi_app = app  # the ASGI app for every route that is not POST / (health, admin, 404)
        self.host = settings.host if host is None else host
        self.port = settings.port if port is None else port
        self.request_timeout = settings.request_timeout
        self.keep_alive_timeout = settings.keep_alive_timeout
        self.shutdown_timeout = settings.shutdown_timeout
        self.hosts = HostPolicy(self.host, settings.allowed_hosts)
        self.hooks = Hooks()  # plug-ins: request decoding, CORS, authentication (see exchange.py)
        self.defaults = DefaultHeaders()
        # The loop's time rounded up to the next tick: per-request deadlines read this instead of calling
        # loop.time() twice per request; they fire up to one tick late, never early.
        self.clock = 0.0
        self.connections: set[HttpProtocol] = set()
        self.stopping = False
        self.held: list[Connection] = []  # connections holding answers until the loop round ends
        self.ready: list[Connection] = []  # connections with requests received this round, not yet run
        self.started = threading.Event()  # set once listening (or when start-up failed: see `error`)
        self.error: BaseException | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self._stop: asyncio.Event | None = None
        self._all_closed: asyncio.Event | None = None
        self._forced = False
        self._ticker: asyncio.TimerHandle | None = None
        self.load: Callable[[], None] | None = None  # run in a thread once listening (see the module docstring)
        self.loading = False

    def run(self, *, signals: bool = True) -> None:
        """Serve until stopped; install SIGTERM/SIGINT handlers when `signals` (main thread only)."""
        loop = new_event_loop()
        try:
            loop.run_until_complete(self.serve(signals=signals))
        finally:
            loop.run_until_complete(loop.shutdown_asyncgens())
            loop.close()

    async def serve(self, *, signals: bool = True) -> None:
        self.loop = loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        self._all_closed = asyncio.Event()
        self._all_closed.set()
        if self.load is None:
            try:
                await self.app.startup()  # seed data and the TTL sweeper, before the first request
            except Exception as err:
                self.error = err
                self.started.set()
                await self.app.shutdown()
                raise StartupFailed(str(err)) from err
        try:
            listener = await loop.create_server(lambda: HttpProtocol(self, loop), self.host, self.port, backlog=2048)
        except BaseException as err:
            self.error = err
            self.started.set()
            if self.load is None:
                await self.app.shutdown()
            raise
        sockets = listener.sockets or ()
        if sockets and self.port == 0:
            self.port = sockets[0].getsockname()[1]
        self._tick()
        if signals:
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._signalled, sig)
        log.info("dynalocal serving on http://%s:%d (CTRL+C to quit)", self.host, self.port)
        self.started.set()
        try:
            if self.load is not None:
                await self._load(self.load)
            await self._stop.wait()
        finally:
            listener.close()
            await self._finish()
            if self._ticker is not None:  # (always: `_tick` ran)
                self._ticker.cancel()
            if signals:
                for sig in (signal.SIGTERM, signal.SIGINT):
                    loop.remove_signal_handler(sig)
        log.info("dynalocal stopped")

    async def _load(self, load: Callable[[], None]) -> None:
        """Run `load` in a thread, answering "loading" meanwhile, then the start-up hooks. On failure the
        gate stays (nothing is served) and StartupFailed is raised, caused by the loader's error."""
        self.loading = True
        self.hooks.before.insert(0, loading_gate)
        try:
            await asyncio.get_running_loop().run_in_executor(None, load)
            await self.app.startup()
        except Exception as err:
            self.error = err
            raise StartupFailed(str(err)) from err
        self.hooks.before.remove(loading_gate)
        self.loading = False
        log.info("dynalocal ready")

    def stop(self) -> None:
        """Begin a graceful stop (safe from any thread)."""
        loop, stop = self.loop, self._stop
        if loop is not None and stop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(stop.set)

    def _signalled(self, sig: signal.Signals) -> None:
        if self._stop.is_set():  # type: ignore[union-attr]
            log.info("%s again: closing every connection now", sig.name)
            self._forced = True
            for conn in list(self.connections):
                conn.abort()
            return
        log.info("%s: finishing %d open connections, then stopping", sig.name, len(self.connections))
        self._stop.set()  # type: ignore[union-attr]

    async def _finish(self) -> None:
        """Finish the requests received, close every connection, then the app's shutdown (journal)."""
        self.stopping = True
        for conn in list(self.connections):
            conn.shutdown()
        if self.connections and not self._forced:
            try:
                await asyncio.wait_for(self._all_closed.wait(), self.shutdown_timeout)  # type: ignore[union-attr]
            except TimeoutError:
                log.warning("%d connections still busy after %.0f s: closing them", len(self.connections),
                            self.shutdown_timeout)
        for conn in list(self.connections):
            conn.abort()
        await self.app.shutdown()

    def connection_lost(self, conn: HttpProtocol) -> None:
        self.connections.discard(conn)
        if not self.connections:
            self._all_closed.set()  # type: ignore[union-attr]

    def run_ready(self) -> None:
        """After a loop round's reads (scheduled by the first request deferred in it): run the requests
        received, connection by connection in the order they arrived. Their answers are held: the
        first one schedules `release_held`, which runs in the loop's next pass, after its poll."""
        conns, self.ready = self.ready, []  # connections look it up here when they defer
        for conn in conns:
            try:
                conn.run_deferred()
            except Exception:  # a bug: as an exception in a protocol callback would, it ends that connection only
                log.exception("internal error running a request")
                conn.abort()

    def release_held(self) -> None:
        """End of a loop round (scheduled by the first answer held in it): write every held answer."""
        held = self.held  # the one list: every connection keeps a reference to it
        conns = held.copy()
        held.clear()
        for conn in conns:
            conn.write_held()

    def connection_made(self, conn: HttpProtocol) -> None:
        self.connections.add(conn)
        self._all_closed.clear()  # type: ignore[union-attr]

    def _tick(self) -> None:
        self.defaults.refresh()
        self.clock = self.loop.time() + TICK  # type: ignore[union-attr]
        self._ticker = self.loop.call_later(TICK, self._tick)  # type: ignore[union-attr]

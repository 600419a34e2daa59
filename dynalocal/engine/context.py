"""What handlers share: the database, the server's settings and the clock.

Plain classes with keyword defaults rather than dataclasses: creating dataclasses at import
costs ~2 ms of server startup. Construction, repr and equality behave as the dataclass ones did.
"""
from __future__ import annotations

import time
from typing import Any, Callable

from dynalocal.capacity.registry import Capacity
from dynalocal.storage.database import Database

# Browser origins served by default (http.plugins.cors; --cors-origins).
LOCAL_ORIGINS = ("http://localhost:*", "http://127.0.0.1:*", "http://[::1]:*")


class _Record:
    """repr and field-wise equality over the instance's attributes, like a dataclass's."""

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={value!r}" for name, value in vars(self).items())
        return f"{type(self).__qualname__}({fields})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return vars(self) == vars(other)

    __hash__ = None  # type: ignore[assignment]  # mutable, compared by value: unhashable


class Settings(_Record):
    """The server's options (see the command line in cli.py)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 8000,
                 throttling: str = "enforce",  # enforce | report | off
                 burst_seconds: float = 300.0,  # unused provisioned capacity kept (seconds of the rate)
                 partition_burst_seconds: float = 5.0,  # seconds of a partition's ceiling kept as burst
                 capacity_model: str = "adaptive",  # adaptive | classic (see storage.capacity.meter)
                 allow_reset: bool = True,
                 ttl_interval: float = 1.0,  # seconds between sweeps for expired TTL items
                 data_dir: str | None = None,  # persist here (write-ahead log + snapshots); None = in memory only
                 sync: str = "batch",  # always | batch | none: when the log is fsynced (see server.groupcommit)
                 sync_interval: float = 0.002,  # batch mode: longest seconds a group gathers while writes keep arriving
                 snapshot_bytes: int = 64 * 1024 * 1024,  # log bytes after which a snapshot is taken (at least)
                 auth: str = "relaxed",  # relaxed | verify | none (see server.auth)
                 credentials: dict | None = None,  # access key -> (secret, account) for --auth verify
                 isolation: str = "shared",  # shared | region | account: which tables a request sees
                 cors_origins: tuple = LOCAL_ORIGINS,  # who may call from a browser (server.cors)
                 transient_delay: float = 0.0,  # seconds tables stay CREATING/UPDATING/DELETING
                 admin_token: str | None = None,  # required by guarded admin routes when set (server.adminguard)
                 ) -> None:
        self.host = host
        self.port = port
        self.throttling = throttling
        self.burst_seconds = burst_seconds
        self.partition_burst_seconds = partition_burst_seconds
        self.capacity_model = capacity_model
        self.allow_reset = allow_reset
        self.ttl_interval = ttl_interval
        self.data_dir = data_dir
        self.sync = sync
        self.sync_interval = sync_interval
        self.snapshot_bytes = snapshot_bytes
        self.auth = auth
        self.credentials = {} if credentials is None else credentials
        self.isolation = isolation
        self.cors_origins = cors_origins
        self.transient_delay = transient_delay
        self.admin_token = admin_token


class Context(_Record):
    """The database, settings, clocks and per-server state every handler receives."""

    def __init__(self, db: Database | None = None, settings: Settings | None = None,
                 clock: Callable[[], float] = time.monotonic,  # capacity refill; injectable for deterministic tests
                 wall_clock: Callable[[], float] = time.time,  # epoch seconds, for TTL expiry; injectable too
                 expiry: dict | None = None,  # table name -> storage.ttl.ExpiryIndex
                 tokens: dict | None = None,  # ClientRequestToken -> (fingerprint, response, monotonic time)
                 journal: Any = None,  # server.durability.Durability when there is a data directory
                 capacity: Capacity | None = None,  # every table's capacity meters
                 startup: list | None = None,  # async callables run once at server start, before serving
                 ) -> None:
        self.db = Database() if db is None else db
        self.db.streams.clock = wall_clock  # stream record times, retention and iterator expiry
        self.settings = Settings() if settings is None else settings
        self.capacity = Capacity(self.settings, clock, self.db) if capacity is None else capacity
        self.wall_clock = wall_clock
        self.expiry = {} if expiry is None else expiry
        self.tokens = {} if tokens is None else tokens
        self.journal = journal
        self.startup = [] if startup is None else startup

    @property
    def clock(self) -> Callable[[], float]:
        """The capacity clock (monotonic seconds); assigning it moves the meters to the new clock."""
        return self.capacity.clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self.capacity.clock = value

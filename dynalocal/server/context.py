"""What handlers share: the database, the server's settings and the clock."""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

from ..storage.database import Database


@dataclass
class Settings:
    host: str = "127.0.0.1"
    port: int = 8000
    throttling: str = "enforce"  # enforce | report | off
    burst_seconds: float = 300.0
    allow_reset: bool = True
    ttl_interval: float = 1.0  # seconds between sweeps for expired TTL items
    data_dir: str | None = None  # persist here (write-ahead log + snapshots); None = in memory only
    sync: str = "batch"  # always | batch | none: when the log is fsynced (see server.groupcommit)
    sync_interval: float = 0.002  # batch mode: least seconds between fsyncs while several writes wait
    snapshot_bytes: int = 64 * 1024 * 1024  # log bytes after which a snapshot is taken (at least)


@dataclass
class Context:
    db: Database = field(default_factory=Database)
    settings: Settings = field(default_factory=Settings)
    clock: Callable[[], float] = time.monotonic  # capacity refill; injectable for deterministic tests
    wall_clock: Callable[[], float] = time.time  # epoch seconds, for TTL expiry; injectable too
    expiry: dict = field(default_factory=dict)  # table name -> storage.ttl.ExpiryIndex
    tokens: dict = field(default_factory=dict)  # ClientRequestToken -> (fingerprint, response, monotonic time)
    journal: Any = None  # server.durability.Durability when there is a data directory

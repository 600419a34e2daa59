"""What handlers share: the database, the server's settings and the clock.

Plain classes with keyword defaults rather than dataclasses: creating dataclasses at import
costs ~2 ms of server startup. Construction, repr and equality behave as the dataclass ones did.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Protocol

from dynalocal.capacity.registry import Capacity
from dynalocal.config import Settings
from dynalocal.storage.database import Database

if TYPE_CHECKING:
    from dynalocal.journal.groupcommit import Ticket
    from dynalocal.storage.partition import Record
    from dynalocal.storage.table import Table


class Journal(Protocol):
    """What the server uses of its journal through `Context.journal` (http.durability.Durability,
    when there is a data directory): each request's writes are bracketed by `begin` and `seal` (or
    `commit`), and `reset` drops every table durably (engine.reset)."""

    def begin(self) -> None: ...

    def seal(self, target: str | None, raw: bytes, status: int, body: bytes) -> tuple[int, bytes, Ticket | None]: ...

    def settled(self, durable: Ticket, status: int, body: bytes) -> tuple[int, bytes]: ...

    async def commit(self, target: str | None, raw: bytes, status: int, body: bytes) -> tuple[int, bytes]: ...

    async def reset(self) -> int: ...

    def adopt(self, table: Table, items: Iterable[tuple[bytes, Record]] | None = None) -> None: ...

    async def close(self) -> None: ...


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


class Context(_Record):
    """The database, settings, clocks and per-server state every handler receives."""

    def __init__(self, db: Database | None = None, settings: Settings | None = None,
                 clock: Callable[[], float] = time.monotonic,  # capacity refill; injectable for deterministic tests
                 wall_clock: Callable[[], float] = time.time,  # epoch seconds, for TTL expiry; injectable too
                 expiry: dict | None = None,  # table name -> storage.ttl.ExpiryIndex
                 tokens: dict | None = None,  # ClientRequestToken -> (fingerprint, response, monotonic time)
                 journal: Journal | None = None,  # http.durability.Durability when there is a data directory
                 capacity: Capacity | None = None,  # every table's capacity meters
                 startup: list | None = None,  # async callables run once at server start, before serving
                 ) -> None:
        self.db = Database() if db is None else db
        self.db.streams.clock = wall_clock  # stream record times, retention and iterator expiry
        self.settings = Settings() if settings is None else settings
        self.capacity = Capacity(self.settings, clock, self.db) if capacity is None else capacity
        self.db.vector_lag.seconds = self.settings.vector_index_lag  # measured on the capacity clock, even reassigned
        self.db.vector_lag.clock = lambda: self.capacity.clock()
        self.wall_clock = wall_clock
        self.expiry = {} if expiry is None else expiry
        self.tokens = {} if tokens is None else tokens
        self.journal = journal
        self.startup = [] if startup is None else startup
        self.jobs: dict = {}  # background operations (bulk loads, exports, imports): engine.jobs

    @property
    def clock(self) -> Callable[[], float]:
        """The capacity clock (monotonic seconds); assigning it moves the meters to the new clock."""
        return self.capacity.clock

    @clock.setter
    def clock(self, value: Callable[[], float]) -> None:
        self.capacity.clock = value

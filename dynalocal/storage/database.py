"""The catalog: all tables by name, each with its data and its description metadata.

Requests run one at a time on the event loop thread, so a request's reads and writes are atomic
with respect to every other request. With `--isolation region|account` the tables of each
region (or account and region) live in the same catalog under scoped keys, `<scope>/<name>`
(`/` cannot occur in a table name); in the default shared mode the key is the name itself.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from dynalocal.storage.streams import StreamRegistry
from dynalocal.storage.table import Table, VectorLag
from dynalocal.values.keys import KeySchema

ACCOUNT = "000000000000"
REGION = "us-east-1"
SCOPE_SEPARATOR = "/"


@dataclass
class TableEntry:
    """A table: its items plus what DescribeTable reports about it."""

    table: Table
    key_schema: list[dict]
    attribute_definitions: list[dict]
    billing_mode: str  # PROVISIONED | PAY_PER_REQUEST
    read_capacity: int = 0
    write_capacity: int = 0
    created: float = field(default_factory=time.time)
    table_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    status: str = "ACTIVE"
    gsis: list[dict] = field(default_factory=list)
    lsis: list[dict] = field(default_factory=list)
    vector_indexes: list[dict] = field(default_factory=list)  # definitions + phase (engine.vector_specs)
    tags: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other description members, echoed
    ttl_attribute: str | None = None  # TimeToLive attribute name while TTL is enabled
    point_in_time_recovery: bool = False
    pitr_since: float | None = None  # when PITR was (last) enabled: the earliest restorable time's lower bound
    pitr_days: int = 35  # RecoveryPeriodInDays
    # resource ARN ("" for the table itself, else its stream's ARN) -> [policy JSON text, RevisionId]
    resource_policies: dict[str, list] = field(default_factory=dict)  # stored, not enforced (engine.backups.policies)
    transient_until: float = 0.0  # wall-clock end of a delayed CREATING/UPDATING status (server.handlers.transient)
    # when the table last became PAY_PER_REQUEST (None: created so, or never); BillingModeSummary shows it
    pay_per_request_since: float | None = None
    contributor_insights: dict[str | None, str] = field(default_factory=dict)  # index (None = table) -> status
    region: str = REGION  # the region and account of the request that created the table (its ARN)
    account: str = ACCOUNT

    @property
    def name(self) -> str:
        """The table's name, as clients know it."""
        return self.table.name.rpartition(SCOPE_SEPARATOR)[2]

    @property
    def key(self) -> str:
        """The table's key in the catalog: the name, prefixed with its scope under isolation."""
        return self.table.name

    @property
    def arn(self) -> str:
        return f"arn:aws:dynamodb:{self.region}:{self.account}:table/{self.name}"


class Database:
    """Tables by name."""

    def __init__(self) -> None:
        self.tables: dict[str, TableEntry] = {}
        self.deleting: dict[str, tuple[TableEntry, float]] = {}  # dropped tables still shown DELETING, until
        self.streams = StreamRegistry()  # DynamoDB Streams, kept apart: they outlive their tables
        self.backups: dict[str, Any] = {}  # backup ARN -> engine.backups.catalog.Backup: they outlive tables too
        self.histories: dict[str, Any] = {}  # table key -> storage.history.History while PITR is enabled
        self.vector_lag = VectorLag()  # writes reach vector indexes at once unless the Context sets a lag

    def create(self, name: str, schema: KeySchema, partitions: int = 1, **meta: Any) -> TableEntry:
        entry = TableEntry(table=Table(name, schema, partitions), **meta)
        entry.table.vector_lag = self.vector_lag
        self.tables[name] = entry
        return entry

    def drop(self, name: str) -> TableEntry | None:
        return self.tables.pop(name, None)

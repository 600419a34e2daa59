"""The catalog: all tables by name, each with its data and its description metadata.

All credentials and regions share one database. Requests run one at a time on the event
loop thread, so a request's reads and writes are atomic with respect to every other request.
"""
from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from .keys import KeySchema
from .streams import StreamRegistry
from .table import Table

ACCOUNT = "000000000000"
REGION = "us-east-1"


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
    tags: dict[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)  # other description members, echoed
    ttl_attribute: str | None = None  # TimeToLive attribute name while TTL is enabled
    point_in_time_recovery: bool = False
    # when the table last became PAY_PER_REQUEST (None: created so, or never); BillingModeSummary shows it
    pay_per_request_since: float | None = None
    contributor_insights: dict[str | None, str] = field(default_factory=dict)  # index (None = table) -> status

    @property
    def name(self) -> str:
        return self.table.name

    @property
    def arn(self) -> str:
        return f"arn:aws:dynamodb:{REGION}:{ACCOUNT}:table/{self.name}"


class Database:
    """Tables by name."""

    def __init__(self) -> None:
        self.tables: dict[str, TableEntry] = {}
        self.streams = StreamRegistry()  # DynamoDB Streams, kept apart: they outlive their tables

    def create(self, name: str, schema: KeySchema, partitions: int = 1, **meta: Any) -> TableEntry:
        entry = TableEntry(table=Table(name, schema, partitions), **meta)
        self.tables[name] = entry
        return entry

    def drop(self, name: str) -> TableEntry | None:
        return self.tables.pop(name, None)

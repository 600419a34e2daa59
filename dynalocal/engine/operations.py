"""The operation catalogue: every operation, its handler and what other layers need to know of it.

One `Operation` per operation: its handler (module, function), its tags, and the expression
and legacy parameters it takes. Everything else is derived from it: HANDLERS and STREAM_HANDLERS
(routing, engine.dispatch), the journal's kind of each target (http.durability), and the
expression compiler's per-operation facts (`expressions.compile.configure`, called below).

A handler takes (context, caller, validated body) and returns a dict or JSON bytes. The data-plane
modules (items, query, batch) are imported with this module; the rest are imported on the first
call of one of their operations, which keeps them off server startup: the stand-in then replaces
itself in its table.
"""
from __future__ import annotations

from collections.abc import Callable
from importlib import import_module

from dynalocal.engine import batch, items, query
from dynalocal.engine.caller import Caller
from dynalocal.engine.context import Context
from dynalocal.expressions import compile as expression_compiler

Handler = Callable[[Context, Caller, dict], "dict | bytes"]

# Tags. Exactly one of READ, WRITE, CONTROL per operation:
READ = "read"  # changes nothing that is journaled
WRITE = "write"  # writes items (and stream records), never table metadata
CONTROL = "control"  # may change table metadata (journaled as metadata records)
TOKEN = "token"  # records a ClientRequestToken (a write whose token is undone with it)
SINGLE_ITEM = "single-item"  # PutItem/UpdateItem/DeleteItem: validation messages carry a prefix
STREAMS = "streams"  # the DynamoDB Streams API (its own target prefix)

PROJECTION, CONDITION, UPDATE = "ProjectionExpression", "ConditionExpression", "UpdateExpression"
FILTER, KEY_CONDITION = "FilterExpression", "KeyConditionExpression"
EXPECTED = ("Expected", "ConditionalOperator")


class Operation:
    """One operation of the catalogue (read-only once built)."""

    __slots__ = ("name", "module", "function", "tags", "expressions", "legacy")

    def __init__(self, name: str, module: str, function: str, *tags: str, expressions: tuple[str, ...] = (),
                 legacy: tuple[str, ...] = ()) -> None:
        self.name = name
        self.module = module  # under dynalocal.engine
        self.function = function
        self.tags = frozenset(tags)
        self.expressions = expressions  # expression parameters taken, in DynamoDB's listing order
        self.legacy = legacy  # their legacy equivalents


OPERATIONS: dict[str, Operation] = {op.name: op for op in (
    Operation("GetItem", "items", "get_item", READ, expressions=(PROJECTION,), legacy=("AttributesToGet",)),
    Operation("PutItem", "items", "put_item", WRITE, SINGLE_ITEM, expressions=(CONDITION,), legacy=EXPECTED),
    Operation("DeleteItem", "items", "delete_item", WRITE, SINGLE_ITEM, expressions=(CONDITION,), legacy=EXPECTED),
    Operation("UpdateItem", "items", "update_item", WRITE, SINGLE_ITEM, expressions=(UPDATE, CONDITION),
              legacy=("AttributeUpdates", *EXPECTED)),
    Operation("Query", "query", "query", READ, expressions=(PROJECTION, FILTER, KEY_CONDITION),
              legacy=("AttributesToGet", "QueryFilter", "ConditionalOperator", "KeyConditions")),
    Operation("Scan", "query", "scan", READ, expressions=(PROJECTION, FILTER),
              legacy=("AttributesToGet", "ScanFilter", "ConditionalOperator")),
    Operation("BatchGetItem", "batch", "batch_get_item", READ, expressions=(PROJECTION,),
              legacy=("AttributesToGet",)),
    Operation("BatchWriteItem", "batch", "batch_write_item", WRITE),
    Operation("SearchVectors", "search_vectors", "search_vectors", READ),  # docs/behaviour/vectors.md
    Operation("TransactGetItems", "transactions", "transact_get_items", READ, expressions=(PROJECTION,)),
    # (an Update action also takes UpdateExpression: see expressions.compile)
    Operation("TransactWriteItems", "transactions", "transact_write_items", WRITE, TOKEN, expressions=(CONDITION,)),
    Operation("ExecuteStatement", "partiql.statement", "execute_statement", WRITE),
    Operation("BatchExecuteStatement", "partiql.batch", "batch_execute_statement", WRITE),
    Operation("ExecuteTransaction", "partiql.batch", "execute_transaction", WRITE, TOKEN),
    Operation("CreateTable", "tables", "create_table", CONTROL),
    Operation("DescribeTable", "tables", "describe_table", READ),
    Operation("DeleteTable", "tables", "delete_table", CONTROL),
    Operation("ListTables", "tables", "list_tables", READ),
    Operation("UpdateTable", "tables", "update_table", CONTROL),
    Operation("DescribeLimits", "tables", "describe_limits", READ),
    Operation("DescribeEndpoints", "tables", "describe_endpoints", READ),
    Operation("TagResource", "tags", "tag_resource", CONTROL),
    Operation("UntagResource", "tags", "untag_resource", CONTROL),
    Operation("ListTagsOfResource", "tags", "list_tags_of_resource", READ),
    Operation("UpdateTimeToLive", "ttl", "update_time_to_live", CONTROL),
    Operation("DescribeTimeToLive", "ttl", "describe_time_to_live", READ),
    Operation("DescribeContinuousBackups", "backups.pitr", "describe_continuous_backups", READ),
    Operation("UpdateContinuousBackups", "backups.pitr", "update_continuous_backups", CONTROL),
    Operation("RestoreTableToPointInTime", "backups.pitr", "restore_table_to_point_in_time", CONTROL),
    # Backups are journaled in files of their own (journal.backups), not in the log: READ for the log.
    Operation("CreateBackup", "backups.ondemand", "create_backup", READ),
    Operation("DescribeBackup", "backups.ondemand", "describe_backup", READ),
    Operation("ListBackups", "backups.ondemand", "list_backups", READ),
    Operation("DeleteBackup", "backups.ondemand", "delete_backup", READ),
    Operation("RestoreTableFromBackup", "backups.ondemand", "restore_table_from_backup", CONTROL),
    Operation("PutResourcePolicy", "backups.policies", "put_resource_policy", CONTROL),
    Operation("GetResourcePolicy", "backups.policies", "get_resource_policy", READ),
    Operation("DeleteResourcePolicy", "backups.policies", "delete_resource_policy", CONTROL),
    Operation("DescribeContributorInsights", "parity", "describe_contributor_insights", READ),
    Operation("UpdateContributorInsights", "parity", "update_contributor_insights", CONTROL),
    Operation("ListContributorInsights", "parity", "list_contributor_insights", READ),
    Operation("DescribeKinesisStreamingDestination", "parity", "describe_kinesis_streaming_destination", READ),
    # Background operations (engine.jobs journals their records; their item writes are journaled as they happen):
    Operation("StartBulkPutItems", "bulk", "start_bulk_put_items", READ),
    Operation("DescribeBulkOperation", "bulk", "describe_bulk_operation", READ),
    Operation("ListBulkOperations", "bulk", "list_bulk_operations", READ),
    Operation("CancelBulkOperation", "bulk", "cancel_bulk_operation", READ),
    Operation("ExportTableToPointInTime", "exports", "export_table_to_point_in_time", READ),
    Operation("DescribeExport", "exports", "describe_export", READ),
    Operation("ListExports", "exports", "list_exports", READ),
    Operation("ImportTable", "imports", "import_table", CONTROL),  # creates the table in the request
    Operation("DescribeImport", "imports", "describe_import", READ),
    Operation("ListImports", "imports", "list_imports", READ),
    Operation("ListStreams", "streams", "list_streams", READ, STREAMS),
    Operation("DescribeStream", "streams", "describe_stream", READ, STREAMS),
    Operation("GetShardIterator", "streams", "get_shard_iterator", READ, STREAMS),
    Operation("GetRecords", "streams", "get_records", READ, STREAMS),
)}

# DynamoDB operations dynalocal does not implement: a clear error, not "unknown operation".
UNIMPLEMENTED = frozenset("""
CreateGlobalTable DescribeGlobalTable DescribeGlobalTableSettings DescribeTableReplicaAutoScaling
DisableKinesisStreamingDestination EnableKinesisStreamingDestination ListGlobalTables UpdateGlobalTable
UpdateGlobalTableSettings UpdateKinesisStreamingDestination UpdateTableReplicaAutoScaling
""".split())
EAGER = {"items": items, "query": query, "batch": batch}  # imported with this module (the data plane)
STREAMS_PREFIX = "DynamoDBStreams_20120810."


def _lazy(table: dict[str, Handler], op: Operation) -> Handler:
    """A stand-in for op's handler: imports it on the first call, then installs it in `table`."""
    real: Handler | None = None

    def handler(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
        nonlocal real
        if real is None:
            real = getattr(import_module(f"dynalocal.engine.{op.module}"), op.function)
            if table.get(op.name) is handler:
                table[op.name] = real
        return real(ctx, caller, body)

    handler.__name__ = handler.__qualname__ = op.function
    return handler


def _handlers(streams: bool) -> dict[str, Handler]:
    table: dict[str, Handler] = {}
    for op in OPERATIONS.values():
        if (STREAMS in op.tags) is streams:
            module = EAGER.get(op.module)
            table[op.name] = getattr(module, op.function) if module is not None else _lazy(table, op)
    return table


HANDLERS = _handlers(streams=False)  # the DynamoDB API
STREAM_HANDLERS = _handlers(streams=True)  # the DynamoDB Streams API, served on the same port
KNOWN_OPERATIONS = frozenset(HANDLERS) | UNIMPLEMENTED  # every operation DynamoDB's API has


def tagged(tag: str) -> frozenset[str]:
    """The names of the operations carrying `tag`."""
    return frozenset(name for name, op in OPERATIONS.items() if tag in op.tags)


expression_compiler.configure(
    {name: (op.expressions, op.legacy) for name, op in OPERATIONS.items() if op.expressions or op.legacy},
    tagged(SINGLE_ITEM))

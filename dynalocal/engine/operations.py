"""Operation name -> handler. A handler takes (context, validated body) and returns a dict or JSON bytes.

The data-plane modules (items, query, batch) are imported with the package. The rest (control
plane, transactions, tags, TTL, parity stubs) are imported on the first call of one of their
operations, which keeps them off server startup; the stand-in then replaces itself in HANDLERS.
"""
from __future__ import annotations

from importlib import import_module
from typing import Callable

from dynalocal.engine.context import Context
from dynalocal.engine import batch
from dynalocal.engine import items
from dynalocal.engine import query

Handler = Callable[[Context, dict], "dict | bytes"]

HANDLERS: dict[str, Handler] = {
    "GetItem": items.get_item,
    "PutItem": items.put_item,
    "DeleteItem": items.delete_item,
    "UpdateItem": items.update_item,
    "Query": query.query,
    "Scan": query.scan,
    "BatchGetItem": batch.batch_get_item,
    "BatchWriteItem": batch.batch_write_item,
}

# Operation -> (module, function) of the handlers imported on first use.
LAZY: dict[str, tuple[str, str]] = {
    "CreateTable": ("tables", "create_table"),
    "DescribeTable": ("tables", "describe_table"),
    "DeleteTable": ("tables", "delete_table"),
    "ListTables": ("tables", "list_tables"),
    "UpdateTable": ("tables", "update_table"),
    "DescribeLimits": ("tables", "describe_limits"),
    "DescribeEndpoints": ("tables", "describe_endpoints"),
    "TransactWriteItems": ("transactions", "transact_write_items"),
    "TransactGetItems": ("transactions", "transact_get_items"),
    "TagResource": ("tags", "tag_resource"),
    "UntagResource": ("tags", "untag_resource"),
    "ListTagsOfResource": ("tags", "list_tags_of_resource"),
    "UpdateTimeToLive": ("ttl", "update_time_to_live"),
    "DescribeTimeToLive": ("ttl", "describe_time_to_live"),
    "ExecuteStatement": ("partiql.statement", "execute_statement"),
    "BatchExecuteStatement": ("partiql.batch", "batch_execute_statement"),
    "ExecuteTransaction": ("partiql.batch", "execute_transaction"),
    "DescribeContinuousBackups": ("parity", "describe_continuous_backups"),
    "UpdateContinuousBackups": ("parity", "update_continuous_backups"),
    "DescribeContributorInsights": ("parity", "describe_contributor_insights"),
    "UpdateContributorInsights": ("parity", "update_contributor_insights"),
    "ListContributorInsights": ("parity", "list_contributor_insights"),
    "DescribeKinesisStreamingDestination": ("parity", "describe_kinesis_streaming_destination"),
}


def _lazy(operation: str, module: str, name: str) -> Handler:
    """A stand-in for `module.name`: imports it on the first call, then installs it in HANDLERS."""
    real: Handler | None = None

    def handler(ctx: Context, body: dict) -> "dict | bytes":
        nonlocal real
        if real is None:
            real = getattr(import_module(f"dynalocal.engine.{module}"), name)
            for table in (HANDLERS, STREAM_HANDLERS):
                if table.get(operation) is handler:
                    table[operation] = real
        return real(ctx, body)

    handler.__name__ = handler.__qualname__ = name
    return handler


HANDLERS.update((op, _lazy(op, module, name)) for op, (module, name) in LAZY.items())

# The DynamoDB Streams API, served on the same port under its own target prefix.
STREAMS_PREFIX = "DynamoDBStreams_20120810."
STREAM_HANDLERS: dict[str, Handler] = {}
STREAM_HANDLERS.update((op, _lazy(op, "streams", name)) for op, name in (
    ("ListStreams", "list_streams"), ("DescribeStream", "describe_stream"),
    ("GetShardIterator", "get_shard_iterator"), ("GetRecords", "get_records")))

# Every operation DynamoDB has: known-but-unimplemented ones get a clear error, not "unknown".
KNOWN_OPERATIONS = frozenset("""
BatchExecuteStatement BatchGetItem BatchWriteItem CreateBackup CreateGlobalTable CreateTable DeleteBackup
DeleteItem DeleteResourcePolicy DeleteTable DescribeBackup DescribeContinuousBackups DescribeContributorInsights
DescribeEndpoints DescribeExport DescribeGlobalTable DescribeGlobalTableSettings DescribeImport
DescribeKinesisStreamingDestination DescribeLimits DescribeTable DescribeTableReplicaAutoScaling DescribeTimeToLive
DisableKinesisStreamingDestination EnableKinesisStreamingDestination ExecuteStatement ExecuteTransaction
ExportTableToPointInTime GetItem GetResourcePolicy ImportTable ListBackups ListContributorInsights ListExports
ListGlobalTables ListImports ListTables ListTagsOfResource PutItem PutResourcePolicy Query RestoreTableFromBackup
RestoreTableToPointInTime Scan TagResource TransactGetItems TransactWriteItems UntagResource UpdateContinuousBackups
UpdateContributorInsights UpdateGlobalTable UpdateGlobalTableSettings UpdateItem UpdateKinesisStreamingDestination
UpdateTable UpdateTableReplicaAutoScaling UpdateTimeToLive
""".split())

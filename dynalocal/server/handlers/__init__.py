"""Operation name -> handler. A handler takes (context, validated body) and returns a dict or JSON bytes."""
from __future__ import annotations

from typing import Callable

from ..context import Context
from . import batch, items, parity, query, tables, tags, transactions, ttl

Handler = Callable[[Context, dict], "dict | bytes"]

HANDLERS: dict[str, Handler] = {
    "CreateTable": tables.create_table,
    "DescribeTable": tables.describe_table,
    "DeleteTable": tables.delete_table,
    "ListTables": tables.list_tables,
    "UpdateTable": tables.update_table,
    "DescribeLimits": tables.describe_limits,
    "DescribeEndpoints": tables.describe_endpoints,
    "GetItem": items.get_item,
    "PutItem": items.put_item,
    "DeleteItem": items.delete_item,
    "UpdateItem": items.update_item,
    "Query": query.query,
    "Scan": query.scan,
    "BatchGetItem": batch.batch_get_item,
    "BatchWriteItem": batch.batch_write_item,
    "TransactWriteItems": transactions.transact_write_items,
    "TransactGetItems": transactions.transact_get_items,
    "TagResource": tags.tag_resource,
    "UntagResource": tags.untag_resource,
    "ListTagsOfResource": tags.list_tags_of_resource,
    "UpdateTimeToLive": ttl.update_time_to_live,
    "DescribeTimeToLive": ttl.describe_time_to_live,
    "DescribeContinuousBackups": parity.describe_continuous_backups,
    "UpdateContinuousBackups": parity.update_continuous_backups,
    "DescribeContributorInsights": parity.describe_contributor_insights,
    "UpdateContributorInsights": parity.update_contributor_insights,
    "ListContributorInsights": parity.list_contributor_insights,
    "DescribeKinesisStreamingDestination": parity.describe_kinesis_streaming_destination,
}

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

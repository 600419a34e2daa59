"""Operation name -> handler. A handler takes (context, validated body) and returns a dict or JSON bytes."""
from __future__ import annotations

from typing import Callable

from ..context import Context
from . import items, tables

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

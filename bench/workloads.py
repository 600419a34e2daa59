"""The fixed workloads: the tables each needs and the wrk Lua script that drives it."""
from __future__ import annotations

import concurrent.futures
from dataclasses import dataclass

import boto3
from botocore.config import Config

GET_ITEMS = 10_000
QUERY_PARTITIONS = 1_000  # x 100 items = 100k items in the Query/Scan table
QUERY_ITEMS = 100
COUNTERS = 1_000
PAYLOAD = "x" * 150  # makes each stored item about 200 bytes


def client(url: str):
    return boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1", aws_access_key_id="bench",
                        aws_secret_access_key="bench",
                        config=Config(retries={"total_max_attempts": 20, "mode": "standard"}, max_pool_connections=16))


def _create(ddb, name: str, keys: list[tuple[str, str, str]], dynalocal: bool) -> None:
    kwargs = {}
    if dynalocal:
        # A table warmed for the load, as a production table serving it would be: enough partitions
        # that one client never meets a partition's ceiling, and warm throughput above what the
        # fastest workload (BatchWrite: ~5k requests/s x 25 items) consumes, so that with default
        # options (throttling enforced) nothing is throttled and enforce vs off compares equal work.
        kwargs["Tags"] = [{"Key": "dynalocal:partitions", "Value": "256"}]
        kwargs["WarmThroughput"] = {"ReadUnitsPerSecond": 1_000_000, "WriteUnitsPerSecond": 250_000}
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": n, "KeyType": k} for n, _, k in keys],
                     AttributeDefinitions=[{"AttributeName": n, "AttributeType": t} for n, t, _ in keys], **kwargs)
    ddb.get_waiter("table_exists").wait(TableName=name, WaiterConfig={"Delay": 0.2, "MaxAttempts": 300})


def _load(ddb, table: str, items) -> None:
    batch = []
    for item in items:
        batch.append({"PutRequest": {"Item": item}})
        if len(batch) == 25:
            _write(ddb, table, batch)
            batch = []
    if batch:
        _write(ddb, table, batch)


def _write(ddb, table: str, batch: list) -> None:
    pending = {table: batch}
    while pending:
        pending = ddb.batch_write_item(RequestItems=pending).get("UnprocessedItems") or {}


LOADERS = 8


def setup(url: str, dynalocal: bool) -> None:
    """Create and fill the benchmark tables on one target (several loader threads at once)."""
    ddb = client(url)
    _create(ddb, "bench_get", [("pk", "S", "HASH")], dynalocal)
    _create(ddb, "bench_put", [("pk", "S", "HASH")], dynalocal)
    _create(ddb, "bench_upd", [("pk", "S", "HASH")], dynalocal)
    _create(ddb, "bench_query", [("pk", "S", "HASH"), ("sk", "N", "RANGE")], dynalocal)
    jobs = [("bench_get", [{"pk": {"S": f"item-{i:06d}"}, "payload": {"S": PAYLOAD}, "n": {"N": str(i)}}
                           for i in range(GET_ITEMS)]),
            ("bench_upd", [{"pk": {"S": f"c-{i:04d}"}, "c": {"N": "0"}} for i in range(COUNTERS)])]
    query_items = [{"pk": {"S": f"p-{p:04d}"}, "sk": {"N": str(s)}, "payload": {"S": PAYLOAD}}
                   for p in range(QUERY_PARTITIONS) for s in range(QUERY_ITEMS)]
    jobs += [("bench_query", query_items[i::LOADERS]) for i in range(LOADERS)]
    with concurrent.futures.ThreadPoolExecutor(LOADERS) as pool:
        for done in [pool.submit(_load, ddb, table, items) for table, items in jobs]:
            done.result()


_HEADER = """
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/x-amz-json-1.0"
wrk.headers["X-Amz-Target"] = "DynamoDB_20120810.%s"
wrk.headers["X-Amz-Date"] = "20250101T000000Z"
wrk.headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=bench/20250101/us-east-1/dynamodb/aws4_request, SignedHeaders=host;x-amz-date;x-amz-target, Signature=00"
local counter = 0
init = function(args) math.randomseed(os.time() + tonumber(tostring({}):sub(8), 16) %% 100000) end
"""


@dataclass(frozen=True)
class Workload:
    name: str
    operation: str
    body_lua: str  # Lua expression producing the request body

    def script(self) -> str:
        return (_HEADER % self.operation) + (
            "request = function()\n  counter = counter + 1\n  return wrk.format(nil, nil, nil, %s)\nend\n" % self.body_lua)


_BATCH = ("(function() local parts = {} for j = 1, 25 do parts[j] = string.format("
          "'{\"PutRequest\":{\"Item\":{\"pk\":{\"S\":\"b-%d-%d\"},\"payload\":{\"S\":\"" + PAYLOAD + "\"}}}}', "
          "math.random(0, 999999999), j) end "
          "return '{\"RequestItems\":{\"bench_put\":[' .. table.concat(parts, ',') .. ']}}' end)()")

_TRANSACT = ("(function() local parts = {} local base = math.random(0, 999999999) for j = 1, 4 do "
             "parts[j] = string.format('{\"Put\":{\"TableName\":\"bench_put\",\"Item\":{\"pk\":{\"S\":"
             "\"t-%d-%d\"},\"payload\":{\"S\":\"" + PAYLOAD + "\"}}}}', base, j) end "
             "return '{\"TransactItems\":[' .. table.concat(parts, ',') .. ']}' end)()")

WRITES = ("PutItem", "UpdateItem", "BatchWrite(25)", "TransactWrite(4)")  # workloads that change data

WORKLOADS = [
    Workload("GetItem", "GetItem",
             "string.format('{\"TableName\":\"bench_get\",\"Key\":{\"pk\":{\"S\":\"item-%06d\"}}}', "
             f"math.random(0, {GET_ITEMS - 1}))"),
    Workload("PutItem", "PutItem",
             "string.format('{\"TableName\":\"bench_put\",\"Item\":{\"pk\":{\"S\":\"p-%d\"},\"payload\":"
             f"{{\"S\":\"{PAYLOAD}\"}}}}}}', math.random(0, 999999999))"),
    Workload("UpdateItem", "UpdateItem",
             "string.format('{\"TableName\":\"bench_upd\",\"Key\":{\"pk\":{\"S\":\"c-%04d\"}},"
             "\"UpdateExpression\":\"SET #c = #c + :one\",\"ExpressionAttributeNames\":{\"#c\":\"c\"},"
             f"\"ExpressionAttributeValues\":{{\":one\":{{\"N\":\"1\"}}}}}}', math.random(0, {COUNTERS - 1}))"),
    Workload("Query(100)", "Query",
             "string.format('{\"TableName\":\"bench_query\",\"KeyConditionExpression\":\"pk = :p\","
             f"\"ExpressionAttributeValues\":{{\":p\":{{\"S\":\"p-%04d\"}}}}}}', math.random(0, {QUERY_PARTITIONS - 1}))"),
    # A parallel-scan page from a random segment: always scanning from the table's start would make
    # its first partition a hot partition, which dynalocal (rightly) throttles.
    Workload("Scan(Limit 100)", "Scan",
             "string.format('{\"TableName\":\"bench_query\",\"Limit\":100,\"TotalSegments\":64,"
             "\"Segment\":%d}', math.random(0, 63))"),
    Workload("BatchWrite(25)", "BatchWriteItem", _BATCH),
    Workload("TransactWrite(4)", "TransactWriteItems", _TRANSACT),
]

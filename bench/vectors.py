"""SearchVectors: TopK 10 over N items of D dimensions (100,000 x 768 by default), unscoped and
scoped to one HASH value of --per-hash items (1,000 by default).

Loads the items through Table.apply (the one write path, so the vector index listener builds the
index), then reports: median and p99 in-process latency (dispatch: validation + handler + JSON, no
HTTP), requests/s over HTTP (one keep-alive connection), memory per indexed vector (the float32
arrays against the raw 4 x D bytes), and the index build time at start-up (what recovery does:
re-deriving every vector index from the table's items).

    .venv/bin/python bench/vectors.py [--items 100000] [--dims 768] [--per-hash 1000] [--searches 200]
"""
from __future__ import annotations

import argparse
import http.client
import os
import random
import statistics
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # as dynalocal.storage.vectors sets it for the server
import numpy as np  # noqa: E402
import orjson  # noqa: E402

from dynalocal.config import Settings
from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch
from dynalocal.journal.tablemeta import rebuild_indexes
from dynalocal.storage.mutation import Mutation
from dynalocal.testing import LocalServer
from dynalocal.values.attributes import item_size
from dynalocal.values.blob import dumps

PREFIX = "DynamoDB_20120810."
TARGETS = {"scoped": 2.0, "unscoped": 50.0}  # the latency targets, ms


def call(ctx: Context, op: str, body: dict) -> bytes:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    if status != 200:
        raise RuntimeError(out.decode())
    return out


def build(ctx: Context, items: int, dims: int, per_hash: int) -> None:
    """The table, its two vector indexes (unscoped; HASH-scoped) and the items, with random vectors."""
    index = {"VectorAttribute": {"AttributeName": "emb"}, "Dimensions": dims, "DistanceFunction": "COSINE",
             "Projection": {"ProjectionType": "KEYS_ONLY"}}
    call(ctx, "CreateTable", {
        "TableName": "vectors", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "id", "KeyType": "HASH"}],
        "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"},
                                 {"AttributeName": "cat", "AttributeType": "S"}],
        "VectorIndexes": [{**index, "IndexName": "unscoped"},
                          {**index, "IndexName": "scoped",
                           "SearchSchema": [{"AttributeName": "cat", "SearchSchemaElementType": "HASH"}]}]})
    table = ctx.db.tables["vectors"].table
    rng = np.random.default_rng(1)
    for start in range(0, items, 1000):
        block = rng.standard_normal((min(1000, items - start), dims), dtype=np.float32)
        for offset, row in enumerate(block):
            i = start + offset
            item = {"id": {"S": f"item-{i:07d}"}, "cat": {"S": f"cat-{i // per_hash:05d}"},
                    "emb": {"L": [{"N": s} for s in np.char.mod("%.6g", row).tolist()]}}
            key, _ = table.schema.check_item_parts(item)
            table.apply(Mutation(key, (dumps(item), item_size(item)), item))


def request(dims: int, scoped: bool, rng: random.Random) -> dict:
    body = {"TableName": "vectors", "IndexName": "scoped" if scoped else "unscoped", "TopK": 10,
            "SearchVector": [{"N": f"{rng.gauss(0, 1):.6g}"} for _ in range(dims)]}
    if scoped:
        body["SearchConditionExpression"] = "cat = :c"
        body["ExpressionAttributeValues"] = {":c": {"S": "cat-00000"}}
    return body


def latency(ctx: Context, dims: int, scoped: bool, searches: int, cold: bool = False) -> tuple[float, float]:
    """Median and p99 ms of `searches` searches over 20 query vectors. `cold`: every index's cache of
    decoded results (VectorIndex.shown) is emptied before each search, as for queries never seen before."""
    rng = random.Random(2)
    bodies = [orjson.dumps(request(dims, scoped, rng)) for _ in range(20)]
    indexes = [index for entry in ctx.db.tables.values() for index in entry.table.vectors.values()]
    times = []
    for n in range(searches):
        if cold:
            for index in indexes:
                index.shown.clear()
        started = time.perf_counter()
        status, _ = dispatch(ctx, PREFIX + "SearchVectors", bodies[n % len(bodies)])
        times.append(time.perf_counter() - started)
        assert status == 200
    times.sort()
    return statistics.median(times) * 1000, times[int(len(times) * 0.99) - 1] * 1000


def over_http(url: str, dims: int, scoped: bool, seconds: float) -> float:
    host, port = url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port))
    body = orjson.dumps(request(dims, scoped, random.Random(3)))
    headers = {"Content-Type": "application/x-amz-json-1.0", "X-Amz-Target": PREFIX + "SearchVectors",
               "Authorization": "AWS4-HMAC-SHA256 Credential=x/20250101/us-east-1/dynamodb/aws4_request, "
                                "SignedHeaders=host, Signature=00"}
    done = 0
    deadline = time.perf_counter() + seconds
    started = time.perf_counter()
    while time.perf_counter() < deadline:
        connection.request("POST", "/", body, headers)
        response = connection.getresponse()
        response.read()
        assert response.status == 200
        done += 1
    return done / (time.perf_counter() - started)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--dims", type=int, default=768)
    parser.add_argument("--per-hash", type=int, default=1000)
    parser.add_argument("--searches", type=int, default=200)
    parser.add_argument("--http-seconds", type=float, default=5.0)
    args = parser.parse_args()
    ctx = Context(settings=Settings())
    started = time.perf_counter()
    build(ctx, args.items, args.dims, args.per_hash)
    print(f"{args.items} items x {args.dims} dims ({args.per_hash} per HASH value) loaded in "
          f"{time.perf_counter() - started:.1f} s")
    entry = ctx.db.tables["vectors"]
    started = time.perf_counter()
    rebuild_indexes(entry)  # as recovery does at start-up: both vector indexes from the items
    print(f"index build at start-up (2 indexes): {time.perf_counter() - started:.2f} s")
    raw = args.dims * 4
    for name, index in entry.table.vectors.items():
        print(f"memory per vector ({name}): {index.nbytes / index.item_count:.0f} bytes "
              f"({index.nbytes / index.item_count / raw:.2f}x the raw {raw} bytes)")
    for scope in ("scoped", "unscoped"):
        for cold in (True, False):
            median, p99 = latency(ctx, args.dims, scope == "scoped", args.searches, cold)
            print(f"{scope:9} in-process, {'cold' if cold else 'warm'}: median {median:.2f} ms, p99 {p99:.2f} ms "
                  f"(target < {TARGETS[scope]:g} ms)")
    url = LocalServer(ctx=ctx, port=0).start().url
    for scope in ("scoped", "unscoped"):
        print(f"{scope:9} over HTTP: {over_http(url, args.dims, scope == 'scoped', args.http_seconds):.0f} req/s "
              "(one keep-alive connection)")


if __name__ == "__main__":
    main()

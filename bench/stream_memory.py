"""Memory per retained stream record, in process (tracemalloc).

    .venv/bin/python bench/stream_memory.py [--records 50000]

Overwrites 1,000 items of ~200 bytes `--records` times on a table without a stream and on
tables with a KEYS_ONLY and a NEW_AND_OLD_IMAGES stream; the table itself stays the same
size, so the difference per write is what one retained record costs (its bookkeeping, its
keys, and for images the JSON of the item versions only the stream still holds).
"""
from __future__ import annotations

import argparse
import gc
import itertools
import tracemalloc

import orjson

from dynalocal.engine.dispatch import dispatch
from dynalocal.config import Settings
from dynalocal.engine.context import Context

PREFIX = "DynamoDB_20120810."
PAYLOAD = "x" * 150


def _call(ctx: Context, op: str, body: dict) -> None:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    if status != 200:
        raise RuntimeError(out.decode())


def per_write(view: str | None, records: int) -> float:
    """Bytes still allocated per PutItem overwrite after `records` of them."""
    ctx = Context(settings=Settings(throttling="off"), clock=itertools.count(1000.0, 1e-4).__next__,
                  wall_clock=itertools.count(1_700_000_000.0, 1e-3).__next__)
    extra = {} if view is None else {"StreamSpecification": {"StreamEnabled": True, "StreamViewType": view}}
    _call(ctx, "CreateTable", {"TableName": "mem", "BillingMode": "PAY_PER_REQUEST",
                               "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}],
                               "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"}], **extra})
    bodies = [orjson.dumps({"TableName": "mem", "Item": {"pk": {"S": f"item-{i % 1000:04d}"}, "n": {"N": str(i)},
                                                         "payload": {"S": PAYLOAD}}}) for i in range(records + 1000)]
    for raw in bodies[:1000]:  # the table's items exist before measuring
        dispatch(ctx, PREFIX + "PutItem", raw)
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for raw in bodies[1000:]:
        dispatch(ctx, PREFIX + "PutItem", raw)
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    return (after - before) / records


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--records", type=int, default=50_000)
    args = parser.parse_args()
    base = per_write(None, args.records)
    for view in ("KEYS_ONLY", "NEW_AND_OLD_IMAGES"):
        cost = per_write(view, args.records) - base
        print(f"{view:<20} {cost:7.0f} bytes per retained record (item JSON ~{len(PAYLOAD) + 60} bytes)")


if __name__ == "__main__":
    main()

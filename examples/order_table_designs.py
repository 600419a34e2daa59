"""Same write load, two key designs: orders keyed by date versus orders keyed by customer.

240 WCU over 4 partitions gives each 60 WCU/s; orders arrive at 200/s on a simulated clock.
Keying by date sends every order placed today to one partition: it throttles while the
other partitions idle. Keying by customer spreads the same load over all partitions.
Then it prints dynalocal's report, which names the bad design, its hot key and what to change.
Run: .venv/bin/python examples/order_table_designs.py
     .venv/bin/python examples/order_table_designs.py --serve   # then, in another shell: dynalocal report
"""
from __future__ import annotations

import json
import sys
import threading
import urllib.request

from botocore.exceptions import ClientError

from _local import SimulatedClock, client, endpoint

ORDERS = 600
CUSTOMERS = 200
ORDERS_PER_SECOND = 200  # simulated arrival rate: the clock advances 5 ms per order
clock = SimulatedClock()
SERVE = "--serve" in sys.argv  # keep serving on 127.0.0.1:8000 afterwards, for `dynalocal report`
url = endpoint(burst_seconds=2, clock=clock, port=8000 if SERVE else 0)  # a short burst window shows it at once
ddb = client(url)


def run(table: str, key_of) -> None:
    ddb.create_table(TableName=table, KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                                                 {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}],
                     ProvisionedThroughput={"ReadCapacityUnits": 10, "WriteCapacityUnits": 240},
                     Tags=[{"Key": "dynalocal:partitions", "Value": "4"},
                           {"Key": "dynalocal:capacity-model", "Value": "classic"}])
    throttled = 0
    for n in range(ORDERS):
        clock.now += 1 / ORDERS_PER_SECOND
        pk, sk = key_of(n)
        try:
            ddb.put_item(TableName=table, Item={"pk": {"S": pk}, "sk": {"S": sk}, "total": {"N": str(n % 97)}})
        except ClientError as err:
            assert err.response["Error"]["Code"] == "ProvisionedThroughputExceededException"
            throttled += 1
    with urllib.request.urlopen(f"{url}/_dynalocal/tables/{table}/partitions") as resp:
        parts = json.loads(resp.read())["partitions"]
    spread = " / ".join(f"{p['write_units_consumed']:g}" for p in parts)
    print(f"{table:>22}: {throttled:4d} of {ORDERS} writes throttled; write units per partition: {spread}")


run("orders-by-date", lambda n: ("2024-02-10", f"ORDER#{n:05d}"))
run("orders-by-customer", lambda n: (f"CUSTOMER#{n % CUSTOMERS:03d}", f"2024-02-10#ORDER#{n:05d}"))
print()
with urllib.request.urlopen(f"{url}/_dynalocal/report?format=text") as resp:  # what `dynalocal report` prints
    print(resp.read().decode())
if SERVE:
    print(f"Serving on {url}; run `dynalocal report` in another shell. Ctrl-C stops.")
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass

"""The classic hot key: 3 partitions share 3 RCU, so each serves 1 RCU/s (+ burst).

One key read in a loop exhausts its partition; keys in the other partitions keep serving.
Run: .venv/bin/python examples/hot_partition.py
"""
from __future__ import annotations

import json
import urllib.request

from botocore.exceptions import ClientError

from _local import client, endpoint

url = endpoint(burst_seconds=10)  # a short burst window so the demo throttles within seconds
ddb = client(url)
ddb.create_table(TableName="hot-demo", KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
                 AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
                 ProvisionedThroughput={"ReadCapacityUnits": 3, "WriteCapacityUnits": 50},
                 Tags=[{"Key": "dynalocal:partitions", "Value": "3"},
                       {"Key": "dynalocal:capacity-model", "Value": "classic"}])
keys = [f"user-{i}" for i in range(12)]
for k in keys:
    ddb.put_item(TableName="hot-demo", Item={"id": {"S": k}})

served = 0
while True:
    try:
        ddb.get_item(TableName="hot-demo", Key={"id": {"S": "user-0"}}, ConsistentRead=True)
        served += 1
    except ClientError as err:
        print(f"hot key user-0: {served} reads served, then {err.response['Error']['Code']}")
        break

for k in keys[1:]:
    try:
        ddb.get_item(TableName="hot-demo", Key={"id": {"S": k}}, ConsistentRead=True)
        print(f"  {k}: served")
    except ClientError:
        print(f"  {k}: throttled (shares user-0's partition)")

with urllib.request.urlopen(f"{url}/_dynalocal/tables/hot-demo/partitions") as resp:
    for p in json.loads(resp.read())["partitions"]:
        hot = ", ".join(f"{h['key']} ({h['units']:g})" for h in p["hot_keys"][:3])
        print(f"partition {p['index']}: {p['items']} items, {p['read_units_consumed']:g} RCU consumed, "
              f"{p['read_throttle_events']} throttled; hottest: {hot}")

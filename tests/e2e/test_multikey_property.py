"""Property: on a 2+2 multi-attribute GSI, a Query with a random valid key condition (paged) returns
exactly the items a brute-force filter over the table returns, in the same order
(docs/behaviour/multikey-gsi.md §2, §3)."""
from __future__ import annotations

import uuid
from decimal import Decimal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

H1 = ["a", "b"]
H2 = ["1", "2.0"]
R1 = ["a", "ab", "b", "é"]
R2 = ["-20", "-1.5", "0", "3", "100"]
OPS = ["=", "<", "<=", ">", ">=", "BETWEEN", "begins_with"]

item_strategy = st.fixed_dictionaries({  # None: the item lacks that attribute (not in the index)
    "h1": st.sampled_from([*H1, None]), "h2": st.sampled_from([*H2, None]),
    "r1": st.sampled_from([*R1, None]), "r2": st.sampled_from([*R2, None])})


@pytest.fixture(scope="module")
def table(ddb):
    name = f"mk-prop-{uuid.uuid4().hex[:8]}"
    ddb.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST", KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": n, "AttributeType": t}
                              for n, t in (("pk", "S"), ("h1", "S"), ("h2", "N"), ("r1", "S"), ("r2", "N"))],
        GlobalSecondaryIndexes=[{"IndexName": "gsi", "Projection": {"ProjectionType": "ALL"}, "KeySchema": [
            {"AttributeName": "h1", "KeyType": "HASH"}, {"AttributeName": "h2", "KeyType": "HASH"},
            {"AttributeName": "r1", "KeyType": "RANGE"}, {"AttributeName": "r2", "KeyType": "RANGE"}]}])
    yield name
    ddb.delete_table(TableName=name)


def _matches(op: str, value, args: list) -> bool:
    if op == "=":
        return value == args[0]
    if op == "<":
        return value < args[0]
    if op == "<=":
        return value <= args[0]
    if op == ">":
        return value > args[0]
    if op == ">=":
        return value >= args[0]
    if op == "BETWEEN":
        return args[0] <= value <= args[1]
    return value.startswith(args[0])


def _sortable(name: str, value: str):
    return Decimal(value) if name in ("h2", "r2") else value.encode()


@settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(items=st.lists(item_strategy, min_size=20, max_size=60,
                     unique_by=lambda i: (i["h1"], i["h2"], i["r1"], i["r2"])),  # no ties: the order is the key's
       partition=st.integers(0, 59), depth=st.integers(0, 2), op=st.sampled_from(OPS),
       first=st.sampled_from(R1), args=st.lists(st.integers(0, 3), min_size=2, max_size=2),
       forward=st.booleans(), limit=st.one_of(st.none(), st.integers(1, 4)))
def test_query_equals_brute_force(ddb, table, items, partition, depth, op, first, args, forward, limit):
    old = [i["pk"] for i in ddb.scan(TableName=table)["Items"]]
    for chunk in range(0, len(old), 25):
        ddb.batch_write_item(RequestItems={table: [{"DeleteRequest": {"Key": {"pk": k}}}
                                                   for k in old[chunk:chunk + 25]]})
    stored = []
    for n, raw in enumerate(items):
        item = {"pk": {"S": f"p{n:02d}"}}
        item.update({k: {"N" if k in ("h2", "r2") else "S": v} for k, v in raw.items() if v is not None})
        ddb.put_item(TableName=table, Item=item)
        stored.append(item)
    # The partition of one of the items (when it has both HASH attributes), and its first RANGE value.
    chosen = items[partition % len(items)] if items else {}
    h1, h2 = chosen.get("h1") or H1[0], chosen.get("h2") or H2[0]
    first = chosen.get("r1") or first if partition % 3 else first
    # The key condition: both HASH attributes, then `depth` RANGE attributes, the last with `op`.
    expr, values = ["h1 = :h1", "h2 = :h2"], {":h1": {"S": h1}, ":h2": {"N": h2}}
    conditions: list[tuple[str, str, list]] = [("h1", "=", [h1]), ("h2", "=", [h2])]
    if depth == 2:
        expr.append("r1 = :f")
        values[":f"] = {"S": first}
        conditions.append(("r1", "=", [first]))
    if depth:
        name, domain, tag = ("r2", R2, "N") if depth == 2 else ("r1", R1, "S")
        last = "=" if op == "begins_with" and tag == "N" else op
        bounds = sorted((domain[a] for a in args), key=lambda v: _sortable(name, v))
        if last == "BETWEEN":
            expr.append(f"{name} BETWEEN :a AND :b")
            values.update({":a": {tag: bounds[0]}, ":b": {tag: bounds[1]}})
        elif last == "begins_with":
            bounds = [bounds[0][:1]]
            expr.append(f"begins_with({name}, :a)")
            values[":a"] = {tag: bounds[0]}
        else:
            expr.append(f"{name} {last} :a")
            values[":a"] = {tag: bounds[0]}
        conditions.append((name, last, bounds[:2] if last == "BETWEEN" else bounds[:1]))
    got, esk = [], None
    while True:
        kwargs = {"ExclusiveStartKey": esk} if esk else {}
        out = ddb.query(TableName=table, IndexName="gsi", KeyConditionExpression=" AND ".join(reversed(expr)),
                        ExpressionAttributeValues=values, ScanIndexForward=forward,
                        **({"Limit": limit} if limit else {}), **kwargs)
        got += [i["pk"]["S"] for i in out["Items"]]
        esk = out.get("LastEvaluatedKey")
        if esk is None:
            break
    names = ("h1", "h2", "r1", "r2")
    expected = []
    for item in stored:
        if not all(n in item for n in names):
            continue
        plain = {n: _sortable(n, next(iter(item[n].values()))) for n in names}
        if all(_matches(o, plain[n] if o != "begins_with" else next(iter(item[n].values())),
                        [a if o == "begins_with" else _sortable(n, a) for a in a_list])
               for n, o, a_list in conditions):
            expected.append(((plain["r1"], plain["r2"]), item["pk"]["S"]))
    expected.sort(reverse=not forward)
    assert got == [pk for _, pk in expected]

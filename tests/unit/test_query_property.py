"""Property: Query (any key condition, direction, Limit, paging; table or non-unique GSI) equals brute force."""
from __future__ import annotations

import base64
from decimal import Decimal

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalocal.engine.context import Context
from dynalocal.engine.dispatch import dispatch

PREFIX = "DynamoDB_20120810."


def call(ctx: Context, op: str, body: dict) -> dict:
    status, out = dispatch(ctx, PREFIX + op, orjson.dumps(body))
    result = orjson.loads(out)
    assert status == 200, result
    return result


def _values(kind: str):
    if kind == "N":
        return st.one_of(st.integers(-10, 10).map(str),
                         st.decimals(-5, 5, places=2, allow_nan=False).map(lambda d: str(d.normalize())))
    if kind == "S":
        return st.text(alphabet="ab\x00é", min_size=1, max_size=4)
    return st.binary(min_size=1, max_size=3).map(lambda b: base64.b64encode(b).decode())


def _order(kind: str, value: str):
    if kind == "N":
        return Decimal(value)
    if kind == "S":
        return value.encode()
    return base64.b64decode(value)


def _matches(kind: str, op: str | None, operands: list[str], value: str) -> bool:
    if op is None:
        return True
    v = _order(kind, value)
    a = _order(kind, operands[0])
    if op == "BEGINS_WITH":
        return v.startswith(a)
    if op == "BETWEEN":
        return a <= v <= _order(kind, operands[1])
    return {"=": v == a, "<": v < a, "<=": v <= a, ">": v > a, ">=": v >= a}[op]


@st.composite
def scenario(draw):
    kind = draw(st.sampled_from(["N", "S", "B"]))
    rows = draw(st.lists(st.tuples(st.sampled_from(["p", "q"]), _values(kind), st.sampled_from(["x", "y"]),
                                   _values(kind)), min_size=0, max_size=25))
    rows = list({(r[0], _order(kind, r[1])): r for r in rows}.values())  # later puts overwrite earlier ones
    ops = [None, "=", "<", "<=", ">", ">=", "BETWEEN"] + (["BEGINS_WITH"] if kind != "N" else [])
    op = draw(st.sampled_from(ops))
    use_index = draw(st.booleans())
    existing = [r[3] if use_index else r[1] for r in rows]
    operand = st.one_of(st.sampled_from(existing), _values(kind)) if existing else _values(kind)
    operands = [draw(operand)]  # often a stored value: equality at the bounds matters most
    if op == "BETWEEN":
        operands.append(draw(operand))
        operands.sort(key=lambda v: _order(kind, v))
    forward = draw(st.booleans())
    limit = draw(st.one_of(st.none(), st.integers(1, 7)))
    return kind, rows, op, operands, use_index, forward, limit


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_query_equals_brute_force(case):
    kind, rows, op, operands, use_index, forward, limit = case
    ctx = Context()
    call(ctx, "CreateTable", {
        "TableName": "prop", "BillingMode": "PAY_PER_REQUEST",
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": kind},
                                 {"AttributeName": "g", "AttributeType": "S"},
                                 {"AttributeName": "gs", "AttributeType": kind}],
        "GlobalSecondaryIndexes": [{"IndexName": "gidx", "Projection": {"ProjectionType": "ALL"}, "KeySchema": [
            {"AttributeName": "g", "KeyType": "HASH"}, {"AttributeName": "gs", "KeyType": "RANGE"}]}],
    })
    for pk, sk, g, gs in rows:
        item = {"pk": {"S": pk}, "sk": {kind: sk}, "g": {"S": g}, "gs": {kind: gs}}
        call(ctx, "PutItem", {"TableName": "prop", "Item": item})
    items = call(ctx, "Scan", {"TableName": "prop"})["Items"]  # what is stored (numbers canonical)
    assert len(items) == len(rows)
    hash_name, sort_name, hash_value = ("g", "gs", "x") if use_index else ("pk", "sk", "p")
    names = {"#h": hash_name, "#s": sort_name}
    values = {":h": {"S": hash_value}}
    cond = "#h = :h"
    if op is not None:
        values[":a"] = {kind: operands[0]}
        if op == "BETWEEN":
            values[":b"] = {kind: operands[1]}
            cond += " AND #s BETWEEN :a AND :b"
        elif op == "BEGINS_WITH":
            cond += " AND begins_with(#s, :a)"
        else:
            cond += f" AND #s {op} :a"
    else:
        names.pop("#s")
    body = {"TableName": "prop", "KeyConditionExpression": cond, "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values, "ScanIndexForward": forward}
    if use_index:
        body["IndexName"] = "gidx"
    if limit is not None:
        body["Limit"] = limit
    got, start, pages = [], None, 0
    while True:
        page = call(ctx, "Query", dict(body, ExclusiveStartKey=start) if start else body)
        pages += 1
        assert page["Count"] == page["ScannedCount"] == len(page["Items"])
        if limit is not None:
            assert page["Count"] <= limit
            if page["Count"] < limit:
                assert "LastEvaluatedKey" not in page
        got += page["Items"]
        start = page.get("LastEvaluatedKey")
        if start is None:
            break
        assert set(start) == ({"pk", "sk", "g", "gs"} if use_index else {"pk", "sk"})
        assert pages < 100
    expected = [i for i in items if i[hash_name]["S"] == hash_value
                and _matches(kind, op, operands, i[sort_name][kind])]
    expected.sort(key=lambda i: _order(kind, i[sort_name][kind]), reverse=not forward)
    assert [_order(kind, i[sort_name][kind]) for i in got] == [_order(kind, i[sort_name][kind]) for i in expected]
    key = lambda i: (i["pk"]["S"], _order(kind, i["sk"][kind]))  # noqa: E731
    assert sorted(map(key, got)) == sorted(map(key, expected))  # ties in a GSI may come in any order

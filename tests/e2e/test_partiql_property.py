"""Property: a random SELECT on the key returns the same items, in the same order, as the equivalent Query."""
from __future__ import annotations

import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

PKS = ["p0", "p1", "p2", "absent"]
SORT_OPS = ["=", "<", "<=", ">", ">=", "BETWEEN", "begins_with", "two bounds", None]


@pytest.fixture(scope="module")
def table(ddb):
    name = f"pq-prop-{uuid.uuid4().hex[:8]}"
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}, {"AttributeName": "sk", "KeyType": "RANGE"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                                           {"AttributeName": "sk", "AttributeType": "S"}])
    for p in PKS[:3]:
        for i in range(0, 30, 3 if p == "p2" else 1):
            ddb.put_item(TableName=name, Item={"pk": {"S": p}, "sk": {"S": f"{i:02d}"}, "v": {"N": str(i % 7)}})
    yield name
    ddb.delete_table(TableName=name)


def _pages(call, token_in: str, token_out: str, **kwargs) -> list:
    items, token = [], None
    while True:
        out = call(**kwargs, **({token_in: token} if token else {}))
        items += out["Items"]
        token = out.get(token_out)
        if token is None:
            return items


sort_value = st.integers(0, 31).map(lambda i: f"{i:02d}")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pk=st.sampled_from(PKS), op=st.sampled_from(SORT_OPS), a=sort_value, b=sort_value,
       descending=st.booleans(), limit=st.one_of(st.none(), st.integers(1, 7)),
       threshold=st.one_of(st.none(), st.integers(0, 6)))
def test_select_on_the_key_equals_query(ddb, table, pk, op, a, b, descending, limit, threshold):
    low, high = min(a, b), max(a, b)
    where, params = ["pk = ?"], [{"S": pk}]
    key_condition, values = "pk = :pk", {":pk": {"S": pk}}
    if op == "BETWEEN":
        where.append("sk BETWEEN ? AND ?")
        params += [{"S": low}, {"S": high}]
        key_condition += " AND sk BETWEEN :a AND :b"
        values.update({":a": {"S": low}, ":b": {"S": high}})
    elif op == "two bounds":  # sk >= low AND sk < high: the Query reads [low, high], the filter drops high
        where += ["sk >= ?", "sk < ?"]
        params += [{"S": low}, {"S": high}]
        key_condition += " AND sk BETWEEN :a AND :b"
        values.update({":a": {"S": low}, ":b": {"S": high}})
    elif op == "begins_with":
        where.append("begins_with(sk, ?)")
        params.append({"S": a[0]})
        key_condition += " AND begins_with(sk, :a)"
        values[":a"] = {"S": a[0]}
    elif op is not None:
        where.append(f"sk {op} ?")
        params.append({"S": a})
        key_condition += f" AND sk {op} :a"
        values[":a"] = {"S": a}
    query = {"TableName": table, "KeyConditionExpression": key_condition, "ScanIndexForward": not descending}
    if threshold is not None:
        where.append("v > ?")
        params.append({"N": str(threshold)})
        query["FilterExpression"] = "v > :t"
        values[":t"] = {"N": str(threshold)}
    query["ExpressionAttributeValues"] = values
    statement = f'SELECT * FROM "{table}" WHERE {" AND ".join(where)}' + (" ORDER BY sk DESC" if descending else "")
    paging = {"Limit": limit} if limit else {}
    expected = _pages(ddb.query, "ExclusiveStartKey", "LastEvaluatedKey", **query, **paging)
    if op == "two bounds":
        expected = [item for item in expected if item["sk"]["S"] < high]
    got = _pages(ddb.execute_statement, "NextToken", "NextToken", Statement=statement, Parameters=params, **paging)
    assert got == expected

"""Deeply nested PartiQL gets a 400 with PartiQL's syntax-error form, never a 500, on every PartiQL
operation (issue 28; docs/behaviour/expressions.md §4)."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError

from dynalocal.expressions.partiql.cursor import MAX_NESTING

NESTED = "Statement wasn't well formed, can't be processed: Nesting Levels have exceeded supported limits at 1:"


@pytest.fixture(scope="module")
def table(ddb):
    name = "partiql-depth"
    ddb.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                     KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                     AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    ddb.put_item(TableName=name, Item={"pk": {"S": "x"}, "a": {"N": "1"}})
    yield name
    ddb.delete_table(TableName=name)


def shapes(t: str, n: int) -> dict[str, str]:
    """Statements nesting n levels of each kind the parser recurses on."""
    return {
        "parentheses": f'SELECT * FROM "{t}" WHERE ' + "(" * n + "a = 1" + ")" * n,
        "nots": f'SELECT * FROM "{t}" WHERE ' + "NOT " * n + "a = 1",
        "not-parentheses": f'SELECT * FROM "{t}" WHERE ' + "NOT (" * (n // 2) + "NOT " * (n % 2) + "a = 1"
                           + ")" * (n // 2),
        "lists": f'SELECT * FROM "{t}" WHERE a = ' + "[" * n + "1" + "]" * n,
        "maps": f'SELECT * FROM "{t}" WHERE a = ' + "{'k': " * n + "1" + "}" * n,
        "bags": f'SELECT * FROM "{t}" WHERE a IN [' + "<<" * n + "1" + ">>" * n + "]",
        "set": f'UPDATE "{t}" SET a = ' + "[" * n + "1" + "]" * n + " WHERE pk = 'x'",
        "calls": f'UPDATE "{t}" SET a = ' + "list_append(" * n + "a" + ", b)" * n + " WHERE pk = 'x'",
        # the item's own braces are the first level
        "insert": f"INSERT INTO \"{t}\" VALUE {{'pk': 'y', 'a': " + "[" * (n - 1) + "1" + "]" * (n - 1) + "}",
    }


def refused(call) -> str:
    with pytest.raises(ClientError) as info:
        call()
    error = info.value.response["Error"]
    assert (info.value.response["ResponseMetadata"]["HTTPStatusCode"], error["Code"]) == (400, "ValidationException")
    return error["Message"]


@pytest.mark.parametrize("shape", sorted(shapes("t", 1)))
def test_deep_statements_are_refused_with_the_nesting_message(ddb, table, shape):
    for n in (MAX_NESTING + 1, 326, 976):
        statement = shapes(table, n)[shape]
        if len(statement) > 8192:  # Statement's length limit answers first (a 400 too)
            continue
        assert refused(lambda s=statement: ddb.execute_statement(Statement=s)).startswith(NESTED)
        assert refused(lambda s=statement: ddb.execute_transaction(
            TransactStatements=[{"Statement": s}])).startswith(NESTED)
        out = ddb.batch_execute_statement(Statements=[{"Statement": statement}])["Responses"]
        assert out[0]["Error"]["Code"] == "ValidationError" and out[0]["Error"]["Message"].startswith(NESTED)
    assert ddb.get_item(TableName=table, Key={"pk": {"S": "x"}})["Item"] == {"pk": {"S": "x"}, "a": {"N": "1"}}


@pytest.mark.parametrize("shape", sorted(shapes("t", 1)))
def test_nesting_up_to_the_limit_is_not_refused_for_its_depth(ddb, table, shape):
    """At the limit the statement runs (values deeper than 32 levels then meet the item rules)."""
    statement = shapes(table, MAX_NESTING)[shape]
    try:
        ddb.execute_statement(Statement=statement)
    except ClientError as error:
        assert error.response["ResponseMetadata"]["HTTPStatusCode"] == 400
        assert "Nesting Levels have exceeded supported limits at" not in error.response["Error"]["Message"]


def test_the_reported_position_is_the_token_past_the_limit(ddb, table):
    statement = f'SELECT * FROM "{table}" WHERE ' + "(" * 326 + "a = 1" + ")" * 326
    column = len(f'SELECT * FROM "{table}" WHERE ') + MAX_NESTING + 1
    assert refused(lambda: ddb.execute_statement(Statement=statement)) == f"{NESTED}{column}:1"

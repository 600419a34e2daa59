"""ExecuteStatement through boto3: every statement kind, paging, capacity, conditions, errors."""
from __future__ import annotations

import pytest
from botocore.exceptions import ClientError


@pytest.fixture
def music(ddb, make_table):
    """pk S / sk N with a GSI on g and 5 + 1 items."""
    name = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N"), ("g", "S")],
                      GlobalSecondaryIndexes=[{"IndexName": "by-g", "KeySchema": [{"AttributeName": "g", "KeyType": "HASH"}],
                                               "Projection": {"ProjectionType": "ALL"}}])
    for i in range(5):
        ddb.put_item(TableName=name, Item={"pk": {"S": "a"}, "sk": {"N": str(i)}, "g": {"S": f"g{i % 2}"},
                                           "v": {"N": str(i * 10)}, "m": {"M": {"x": {"L": [{"S": "q"}]}}}})
    ddb.put_item(TableName=name, Item={"pk": {"S": "b"}, "sk": {"N": "1"}, "n": {"NULL": True}})
    return name


def run(ddb, statement: str, *params, **kwargs) -> dict:
    if params:
        kwargs["Parameters"] = list(params)
    out = ddb.execute_statement(Statement=statement, **kwargs)
    out.pop("ResponseMetadata")
    return out


def fails(ddb, statement: str, *params, **kwargs) -> tuple[str, str]:
    with pytest.raises(ClientError) as info:
        run(ddb, statement, *params, **kwargs)
    return info.value.response["Error"]["Code"], info.value.response["Error"]["Message"]


def sks(out: dict) -> list:
    return [(i["pk"]["S"], int(i["sk"]["N"])) for i in out["Items"]]


# -- SELECT ---------------------------------------------------------------------------------------

def test_select_full_key(ddb, music):
    out = run(ddb, f'SELECT * FROM "{music}" WHERE pk = \'a\' AND sk = 1')
    assert out["Items"] == [ddb.get_item(TableName=music, Key={"pk": {"S": "a"}, "sk": {"N": "1"}})["Item"]]
    assert run(ddb, f'SELECT * FROM "{music}" WHERE pk = \'a\' AND sk = 99') == {"Items": []}


def test_select_partition_in_sort_order_and_descending(ddb, music):
    assert sks(run(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a'")) == [("a", i) for i in range(5)]
    out = run(ddb, f"SELECT * FROM \"{music}\" WHERE pk IN ['a', 'b'] ORDER BY sk DESC")
    assert sks(out) == [("a", i) for i in (4, 3, 2, 1, 0)] + [("b", 1)]


def test_sort_key_ranges_and_residual_filters(ddb, music):
    t = music
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk > 2")) == [("a", 3), ("a", 4)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk BETWEEN 1 AND 3 AND v <> 20")) == [("a", 1), ("a", 3)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND (sk = 1 OR sk = 3)")) == [("a", 1), ("a", 3)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk IN [1, 2]")) == [("a", 1), ("a", 2)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE 3 >= sk AND 'a' = pk AND NOT v = 10")) == [("a", 0), ("a", 2), ("a", 3)]


def test_both_sort_key_bounds_read_only_the_range(ddb, music):
    t = music
    out = run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk >= 1 AND sk < 3", ReturnConsumedCapacity="TOTAL")
    assert sks(out) == [("a", 1), ("a", 2)]
    query = ddb.query(TableName=t, KeyConditionExpression="pk = :a AND sk BETWEEN :l AND :h", ReturnConsumedCapacity="TOTAL",
                      ExpressionAttributeValues={":a": {"S": "a"}, ":l": {"N": "1"}, ":h": {"N": "3"}})
    assert out["ConsumedCapacity"] == query["ConsumedCapacity"]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk < ? AND sk > ?", {"N": "4"}, {"N": "1"})) == \
        [("a", 2), ("a", 3)]
    assert run(ddb, f"SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk > 3 AND sk < 1")["Items"] == []


def test_scan_conditions_and_functions(ddb, music):
    t = music
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE v = 10")) == [("a", 1)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE v IS MISSING")) == [("b", 1)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE n IS NULL")) == [("b", 1)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE v IS NULL")) == []
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE n IS NOT NULL AND pk = 'b'")) == []
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE zz IS NOT NULL AND pk = 'b'")) == [("b", 1)]
    assert len(run(ddb, f"SELECT * FROM \"{t}\" WHERE v IS NOT MISSING")["Items"]) == 5
    both = f"SELECT * FROM \"{t}\" WHERE size(m) = 1 AND contains(m.x, 'q') AND attribute_type(v, 'N') AND sk < 2"
    assert sorted(sks(run(ddb, both))) == [("a", 0), ("a", 1)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE begins_with(pk, 'b')")) == [("b", 1)]
    assert sorted(sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE v NOT IN [10, 20] AND v NOT BETWEEN 25 AND 35 AND pk = 'a'"))) \
        == [("a", 0), ("a", 4)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE m = {{'x': ['q']}} AND sk = 0 AND pk = 'a'")) == [("a", 0)]
    assert sks(run(ddb, f"SELECT * FROM \"{t}\" WHERE m.x[0] = 'q' AND m['x'][0] = 'q' AND sk = 4")) == [("a", 4)]


def test_projection_uses_the_last_path_name(ddb, music):
    out = run(ddb, f"SELECT v, m.x[0], nope FROM \"{music}\" WHERE pk = 'a' AND sk = 1")
    assert out["Items"] == [{"v": {"N": "10"}, "x[0]": {"S": "q"}}]


def test_parameters(ddb, music):
    out = run(ddb, f'SELECT v FROM "{music}" WHERE pk = ? AND sk = ?', {"S": "a"}, {"N": "2"})
    assert out["Items"] == [{"v": {"N": "20"}}]
    assert fails(ddb, f'SELECT * FROM "{music}" WHERE pk = ?') == (
        "ValidationException", "Number of parameters in request and statement don't match.")
    assert fails(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a'", {"S": "a"})[1] == \
        "Number of parameters in request and statement don't match."


def test_index_query(ddb, music):
    out = run(ddb, f'SELECT * FROM "{music}"."by-g" WHERE g = \'g1\'')
    assert sorted(sks(out)) == [("a", 1), ("a", 3)]
    code, message = fails(ddb, f'SELECT * FROM "{music}"."nope" WHERE g = \'g1\'')
    assert (code, message) == ("ValidationException", "The table does not have the specified index: nope")


# -- paging ---------------------------------------------------------------------------------------

def _all_pages(ddb, statement: str, **kwargs) -> tuple[list, int]:
    items, pages, token = [], 0, None
    while True:
        out = run(ddb, statement, **({"NextToken": token} if token else {}), **kwargs)
        items += out["Items"]
        pages += 1
        token = out.get("NextToken")
        if token is None:
            return items, pages


def test_limit_and_next_token_page_a_query_and_a_scan(ddb, music):
    items, pages = _all_pages(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a'", Limit=2)
    assert [int(i["sk"]["N"]) for i in items] == [0, 1, 2, 3, 4] and pages == 3
    first = run(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a'", Limit=2)
    assert first["LastEvaluatedKey"] == {"pk": {"S": "a"}, "sk": {"N": "1"}}
    items, pages = _all_pages(ddb, f'SELECT * FROM "{music}"', Limit=4)
    assert len(items) == 6 and pages == 2
    items, _ = _all_pages(ddb, f"SELECT * FROM \"{music}\" WHERE pk IN ['b', 'a'] ORDER BY sk DESC", Limit=2)
    assert sks({"Items": items}) == [("b", 1)] + [("a", i) for i in (4, 3, 2, 1, 0)]


def test_limit_counts_items_evaluated_not_returned(ddb, music):
    out = run(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a' AND v > 25", Limit=2)
    assert out["Items"] == [] and "NextToken" in out


def test_one_megabyte_page(ddb, make_table):
    t = make_table([("pk", "HASH"), ("sk", "RANGE")], [("pk", "S"), ("sk", "N")])
    for i in range(5):
        ddb.put_item(TableName=t, Item={"pk": {"S": "p"}, "sk": {"N": str(i)}, "blob": {"S": "x" * 300_000}})
    first = run(ddb, f"SELECT sk FROM \"{t}\" WHERE pk = 'p'")
    query = ddb.query(TableName=t, KeyConditionExpression="pk = :p", ExpressionAttributeValues={":p": {"S": "p"}})
    assert len(first["Items"]) == query["Count"] < 5 and "NextToken" in first
    rest, _ = _all_pages(ddb, f"SELECT sk FROM \"{t}\" WHERE pk = 'p'", NextToken=first["NextToken"])
    assert [int(i["sk"]["N"]) for i in first["Items"] + rest] == [0, 1, 2, 3, 4]


def test_bad_next_token(ddb, music):
    assert fails(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a'", NextToken="garbage") == (
        "ValidationException", "Invalid NextToken")


# -- capacity -------------------------------------------------------------------------------------

def test_capacity_is_the_equivalent_operations(ddb, music):
    key = {"pk": {"S": "a"}, "sk": {"N": "1"}}
    get = ddb.get_item(TableName=music, Key=key, ReturnConsumedCapacity="TOTAL", ConsistentRead=True)
    out = run(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a' AND sk = 1", ReturnConsumedCapacity="TOTAL",
              ConsistentRead=True)
    assert out["ConsumedCapacity"] == get["ConsumedCapacity"] == {"TableName": music, "CapacityUnits": 1.0}
    query = ddb.query(TableName=music, KeyConditionExpression="pk = :a", ExpressionAttributeValues={":a": {"S": "a"}},
                      ReturnConsumedCapacity="INDEXES")
    out = run(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a' AND v = 0", ReturnConsumedCapacity="INDEXES")
    assert out["ConsumedCapacity"] == query["ConsumedCapacity"]
    scan = ddb.scan(TableName=music, ReturnConsumedCapacity="TOTAL")
    assert run(ddb, f'SELECT v FROM "{music}"', ReturnConsumedCapacity="TOTAL")["ConsumedCapacity"] == scan["ConsumedCapacity"]
    gsi = run(ddb, f'SELECT * FROM "{music}"."by-g" WHERE g = \'g0\'', ReturnConsumedCapacity="INDEXES")["ConsumedCapacity"]
    assert gsi == {"TableName": music, "CapacityUnits": 0.5, "GlobalSecondaryIndexes": {"by-g": {"CapacityUnits": 0.5}}}
    two = run(ddb, f"SELECT * FROM \"{music}\" WHERE pk IN ['a', 'b']", ReturnConsumedCapacity="TOTAL")
    assert two["ConsumedCapacity"]["CapacityUnits"] == 1.0  # two Queries of 0.5
    write = run(ddb, f"INSERT INTO \"{music}\" VALUE {{'pk': 'c', 'sk': 1, 'g': 'x'}}", ReturnConsumedCapacity="INDEXES")
    assert write["ConsumedCapacity"] == {"TableName": music, "CapacityUnits": 2.0, "Table": {"CapacityUnits": 1.0},
                                         "GlobalSecondaryIndexes": {"by-g": {"CapacityUnits": 1.0}}}
    assert "ConsumedCapacity" not in run(ddb, f"SELECT * FROM \"{music}\" WHERE pk = 'a' AND sk = 1")


# -- writes ---------------------------------------------------------------------------------------

def test_insert_and_duplicate(ddb, music):
    statement = (f"INSERT INTO \"{music}\" VALUE {{'pk': 'c', 'sk': 1, 'l': [1, 'x', <<'s'>>, {{'k': true}}], "
                 "'b': null, 'ns': <<1, 2>>, 'p': ?}")
    assert run(ddb, statement, {"B": b"\x00"}) == {"Items": []}
    item = ddb.get_item(TableName=music, Key={"pk": {"S": "c"}, "sk": {"N": "1"}})["Item"]
    assert item["l"] == {"L": [{"N": "1"}, {"S": "x"}, {"SS": ["s"]}, {"M": {"k": {"BOOL": True}}}]}
    assert item["b"] == {"NULL": True} and item["ns"] == {"NS": ["1", "2"]} and item["p"] == {"B": b"\x00"}
    assert fails(ddb, statement, {"S": "other"}) == ("DuplicateItemException", "Duplicate primary key exists in table")
    assert ddb.get_item(TableName=music, Key={"pk": {"S": "c"}, "sk": {"N": "1"}})["Item"]["p"] == {"B": b"\x00"}
    assert fails(ddb, f"INSERT INTO \"{music}\" VALUE {{'pk': 'd'}}")[1] == "Key attribute should be present in the item: Key sk"
    # the write maintains the index
    assert run(ddb, f"INSERT INTO \"{music}\" VALUE {{'pk': 'd', 'sk': 1, 'g': 'new'}}") == {"Items": []}
    assert sks(run(ddb, f'SELECT * FROM "{music}"."by-g" WHERE g = \'new\'')) == [("d", 1)]


def test_update_forms_and_returning(ddb, music):
    t = music
    run(ddb, f"INSERT INTO \"{t}\" VALUE {{'pk': 'c', 'sk': 1, 'v': 1, 'b': 2, 'l': [1], 'ns': <<1, 2>>}}")
    out = run(ddb, f"UPDATE \"{t}\" SET v = v + 5, w = list_append(l, [2]) SET q = 'z' REMOVE b "
                   "WHERE pk = 'c' AND sk = 1 RETURNING ALL NEW *")
    assert out["Items"] == [{"pk": {"S": "c"}, "sk": {"N": "1"}, "v": {"N": "6"}, "l": {"L": [{"N": "1"}]},
                             "ns": {"NS": ["1", "2"]}, "q": {"S": "z"}, "w": {"L": [{"N": "1"}, {"N": "2"}]}}]
    out = run(ddb, f"UPDATE \"{t}\" SET ns = set_add(ns, <<3>>) WHERE pk = 'c' AND sk = 1 RETURNING MODIFIED OLD *")
    assert out["Items"] == [{"ns": {"NS": ["1", "2"]}}]
    out = run(ddb, f"UPDATE \"{t}\" SET ns = set_delete(ns, <<1>>), v = v - 1 REMOVE q "
                   "WHERE pk = 'c' AND sk = 1 RETURNING MODIFIED NEW *")
    assert out["Items"] == [{"ns": {"NS": ["2", "3"]}, "v": {"N": "5"}}]
    out = run(ddb, f"UPDATE \"{t}\" SET \"x y\" = 1, l[5] = 9 WHERE pk = 'c' AND sk = 1 RETURNING ALL OLD *")
    assert out["Items"][0]["v"] == {"N": "5"} and "x y" not in out["Items"][0]
    assert run(ddb, f"UPDATE \"{t}\" SET v = 1 WHERE pk = 'c' AND sk = 1") == {"Items": []}
    out = run(ddb, f"UPDATE \"{t}\" SET v = if_not_exists(v, 7), u = if_not_exists(u, 7) WHERE pk = 'c' AND sk = 1 "
                   "RETURNING MODIFIED NEW *")
    assert out["Items"] == [{"v": {"N": "1"}, "u": {"N": "7"}}]


def test_update_and_delete_conditions(ddb, music):
    t = music
    assert fails(ddb, f"UPDATE \"{t}\" SET v = 5 WHERE pk = 'zz' AND sk = 1") == (
        "ConditionalCheckFailedException", "The conditional request failed")
    assert "Item" not in ddb.get_item(TableName=t, Key={"pk": {"S": "zz"}, "sk": {"N": "1"}})
    with pytest.raises(ClientError) as info:
        run(ddb, f"UPDATE \"{t}\" SET v = 5 WHERE pk = 'a' AND sk = 1 AND v = 999",
            ReturnValuesOnConditionCheckFailure="ALL_OLD")
    assert info.value.response["Item"]["v"] == {"N": "10"}
    assert run(ddb, f"UPDATE \"{t}\" SET v = 5 WHERE pk = 'a' AND sk = 1 AND v = 10 AND attribute_exists(m)") == {"Items": []}
    assert fails(ddb, f"DELETE FROM \"{t}\" WHERE pk = 'a' AND sk = 1 AND v < 0")[0] == "ConditionalCheckFailedException"
    out = run(ddb, f"DELETE FROM \"{t}\" WHERE pk = 'a' AND sk = 1 RETURNING ALL OLD *")
    assert out["Items"][0]["v"] == {"N": "5"}
    assert run(ddb, f"DELETE FROM \"{t}\" WHERE pk = 'a' AND sk = 1 RETURNING ALL OLD *") == {"Items": []}
    assert run(ddb, f"DELETE FROM \"{t}\" WHERE pk = 'a' AND sk = 1") == {"Items": []}


@pytest.mark.parametrize("statement,message", [
    ("UPDATE \"{t}\" SET v = 5 WHERE pk = 'c'", "Where clause does not contain a mandatory equality on all key attributes"),
    ("DELETE FROM \"{t}\"", "Where clause does not contain a mandatory equality on all key attributes"),
    ("UPDATE \"{t}\" SET pk = 'x' WHERE pk = 'a' AND sk = 1",
     "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key"),
    ("UPDATE \"{t}\" SET v = 'q' + 1 WHERE pk = 'a' AND sk = 1",
     "Incorrect operand type for operator or function; operator or function: +, operand type: S"),
    ("UPDATE \"{t}\" SET v = nope + 1 WHERE pk = 'a' AND sk = 1",
     "The provided expression refers to an attribute that does not exist in the item"),
    ("SELECT * FROM \"{t}\" WHERE pk = 1", "Key attribute's data type should match its data type in table's schema: Key pk"),
    ("SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk > 'x'",
     "Key attribute's data type should match its data type in table's schema: Key sk"),
    ("SELECT v FROM \"{t}\" WHERE pk = 'a' AND begins_with(sk, 1)",
     "Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"),
    ("SELECT v FROM \"{t}\" WHERE begins_with(v, 'x') = true",
     "The function is not allowed to be used this way in an expression; function: begins_with"),
    ("SELECT v FROM \"{t}\" WHERE attribute_type(v, 'X')",
     "Invalid attribute type name found; type: X, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"),
    ("SELECT v FROM \"{t}\" WHERE v BETWEEN 3 AND 1",
     "The BETWEEN operator requires upper bound to be greater than or equal to lower bound"),
    ("UPDATE \"{t}\" SET v = 1, v = 2 WHERE pk = 'a' AND sk = 1",
     "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [v], path two: [v]"),
    ("UPDATE \"{t}\" SET v = foo(v) WHERE pk = 'a' AND sk = 1", "Unrecognized function: foo"),
    ("SELECT * FROM \"{t}\" WHERE", "Statement wasn't well formed, can't be processed: Unexpected token '<EOF>' at 1:"),
    ("EXISTS(SELECT * FROM \"{t}\" WHERE pk = 'a' AND sk = 1 AND v = 1)",
     "EXISTS can only be used in ExecuteTransaction write requests."),
])
def test_errors(ddb, music, statement, message):
    code, text = fails(ddb, statement.format(t=music))
    assert code == "ValidationException" and text.startswith(message)


def test_missing_table(ddb):
    assert fails(ddb, "SELECT * FROM nope_missing_table") == ("ResourceNotFoundException", "Requested resource not found")


def test_rejected_statements_change_nothing(ddb, music):
    before = ddb.scan(TableName=music)["Items"]
    for statement in (f"UPDATE \"{music}\" SET v = v + 1 WHERE pk = 'a' AND sk = 1 AND v = 0",
                      f"INSERT INTO \"{music}\" VALUE {{'pk': 'a', 'sk': 1}}",
                      f"UPDATE \"{music}\" SET v = 'x' - 1 WHERE pk = 'a' AND sk = 2"):
        with pytest.raises(ClientError):
            run(ddb, statement)
    assert ddb.scan(TableName=music)["Items"] == before


def test_writes_are_marked_as_partiql_mutations(server, ddb, music):
    origins: list[str] = []
    server.ctx.db.tables[music].table.listeners.append(lambda m: origins.append(m.origin))
    run(ddb, f"INSERT INTO \"{music}\" VALUE {{'pk': 'o', 'sk': 1}}")
    ddb.batch_execute_statement(Statements=[{"Statement": f"UPDATE \"{music}\" SET v = 1 WHERE pk = 'o' AND sk = 1"}])
    ddb.execute_transaction(TransactStatements=[{"Statement": f"DELETE FROM \"{music}\" WHERE pk = 'o' AND sk = 1"}])
    ddb.put_item(TableName=music, Item={"pk": {"S": "o"}, "sk": {"N": "2"}})
    assert origins == ["partiql", "partiql", "partiql", "request"]

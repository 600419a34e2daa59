"""The PartiQL planner: which operation each WHERE becomes, key conditions, residual filters, writes."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from dynalocal.engine.partiql.plan import ReadPlan, WritePlan, plan
from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.partiql.parser import Parser
from dynalocal.values.keys import KeySchema

TABLE = KeySchema("pk", "S", "sk", "N")
GSI = KeySchema("g", "S")
HASH_ONLY = KeySchema("id", "S")


def entry(schema: KeySchema = TABLE):
    return SimpleNamespace(table=SimpleNamespace(schema=schema, indexes={"gsi": SimpleNamespace(schema=GSI, multi=None)},
                                           vectors={}))


def planned(text: str, schema: KeySchema = TABLE):
    return plan(Parser(text).parse(), entry(schema))


@pytest.mark.parametrize("where,operation", [
    ("pk = 'a' AND sk = 1", "GetItem"),
    ("sk = 1 AND pk = 'a'", "GetItem"),
    ("'a' = pk AND 1 = sk", "GetItem"),
    ("pk IN ['a', 'b'] AND sk = 1", "GetItem"),
    ("pk = 'a' AND sk = 1 AND v > 3", "GetItem"),
    ("pk = 'a'", "Query"),
    ("pk = 'a' AND sk > 1", "Query"),
    ("pk = 'a' AND sk BETWEEN 1 AND 3", "Query"),
    ("pk = 'a' AND begins_with(sk, '1')", "Query"),
    ("pk IN ['a', 'b']", "Query"),
    ("pk = 'a' AND (sk = 1 OR sk = 2)", "Query"),
    ("pk = 'a' AND sk IN [1, 2]", "Query"),
    ("sk = 1", "Scan"),
    ("pk = 'a' OR sk = 1", "Scan"),
    ("pk <> 'a'", "Scan"),
    ("begins_with(pk, 'a')", "Scan"),
    ("NOT pk = 'a'", "Scan"),
    ("v = 1", "Scan"),
])
def test_operation_of_each_where(where, operation):
    assert planned(f"SELECT * FROM t WHERE {where}").operation == operation


def test_no_where_is_a_scan():
    assert planned("SELECT * FROM t").operation == "Scan"


def test_hash_only_table_equality_is_a_get_item():
    assert planned("SELECT * FROM t WHERE id = 'x'", HASH_ONLY).operation == "GetItem"
    assert planned("SELECT * FROM t WHERE id IN ['x', 'y']", HASH_ONLY).hash_values == (A.Value(":v0"), A.Value(":v1"))


def test_index_reads_are_queries_even_on_the_full_index_key():
    p = planned("SELECT * FROM t.gsi WHERE g = 'x'")
    assert p.operation == "Query" and p.index == "gsi" and p.key_condition == "#h = :h"
    assert p.names == {"#h": "g"}


def test_query_key_condition_and_residual_filter():
    p = planned("SELECT * FROM t WHERE v > 2 AND 3 >= sk AND pk = 'a' AND w = 1")
    assert p.key_condition == "#h = :h AND #r <= :v1" and p.range_values == (":v1",)
    assert p.hash_values == (A.Value(":v2"),)
    assert p.residual == A.And((A.Compare(">", A.Path(("v",), False), A.Value(":v0")),
                                A.Compare("=", A.Path(("w",), False), A.Value(":v3"))))
    assert p.filter({"v": {"N": "3"}, "w": {"N": "1"}}, {}, {":v0": {"N": "2"}, ":v3": {"N": "1"}})


def test_between_and_begins_with_key_conditions():
    assert planned("SELECT * FROM t WHERE pk = 'a' AND sk BETWEEN 1 AND 2").key_condition == \
        "#h = :h AND #r BETWEEN :v1 AND :v2"
    assert planned("SELECT * FROM t WHERE pk = 'a' AND begins_with(sk, 'x')").key_condition == \
        "#h = :h AND begins_with(#r, :v1)"


def test_in_list_keeps_one_slot_per_option():
    assert planned("SELECT * FROM t WHERE pk IN ['b', 'a', 'b']").hash_values == tuple(A.Value(f":v{i}") for i in range(3))


def test_order_by():
    assert planned("SELECT * FROM t WHERE pk = 'a' ORDER BY sk DESC").descending
    assert not planned("SELECT * FROM t WHERE pk = 'a' ORDER BY pk DESC").descending


@pytest.mark.parametrize("text,message", [
    ("SELECT * FROM t ORDER BY sk", "Must have WHERE clause in the statement when using ORDER BY clause."),
    ("SELECT * FROM t WHERE pk = 'a' ORDER BY v", "Variable reference v in ORDER BY clause must be part of the primary key"),
    ("SELECT * FROM t WHERE v = 1 ORDER BY sk",
     "Must have at least one non-optional hash key condition in WHERE clause when using ORDER BY clause."),
    ("SELECT * FROM t.gsi WHERE g = 'x' ORDER BY sk", "Variable reference sk in ORDER BY clause must be part of the primary key"),
    ("SELECT * FROM t.nope WHERE g = 'x'", "The table does not have the specified index: nope"),
    ("SELECT a, b.a FROM t", "Duplicate identifiers in select clause: a"),
    ("UPDATE t SET v = 1 WHERE pk = 'a'", "Where clause does not contain a mandatory equality on all key attributes"),
    ("UPDATE t SET v = 1 WHERE pk = 'a' AND sk > 1", "Where clause does not contain a mandatory equality on all key attributes"),
    ("UPDATE t SET v = 1 WHERE pk = 'a' AND sk = 1 OR v = 1",
     "Where clause does not contain a mandatory equality on all key attributes"),
    ("UPDATE t SET v = 1", "Where clause does not contain a mandatory equality on all key attributes"),
    ("DELETE FROM t WHERE pk IN ['a'] AND sk = 1", "Where clause does not contain a mandatory equality on all key attributes"),
    ("UPDATE t SET v = 1 WHERE pk = 'a' AND sk = 1 AND sk = 2",
     "Multiple conditions on same key sk. Only single item Update/Insert/Delete are supported"),
])
def test_plan_errors(text, message):
    with pytest.raises(ValidationException) as info:
        planned(text)
    assert info.value.message == message


def test_projection_aliases():
    assert planned("SELECT a, m.x[0], \"q r\" FROM t").aliases == ("a", "x[0]", "q r")


def test_insert_guards_the_key():
    p = planned("INSERT INTO t VALUE {'pk': 'a', 'sk': 1}")
    assert isinstance(p, WritePlan) and p.kind == "Insert"
    assert p.condition == "attribute_not_exists(#n0)" and p.names == {"#n0": "pk"}


def test_update_renders_update_and_condition_expressions():
    p = planned("UPDATE t SET a = a + 1, \"b c\" = list_append(l, [1]) SET s = set_add(s, <<'x'>>) REMOVE r[2] "
                "WHERE pk = 'k' AND sk = 1 AND (v = 2 OR NOT w IS MISSING)")
    assert p.kind == "Update" and set(p.key) == {"pk", "sk"}
    assert p.update == "SET #n0 = #n0 + :v0, #n1 = list_append(#n2, :v1) REMOVE #n4[2] ADD #n3 :v2"
    assert p.condition == "attribute_exists(#n5) AND (#n6 = :v5 OR (NOT attribute_not_exists(#n7)))"
    assert p.names["#n5"] == "pk" and p.values == (":v0", ":v1", ":v2", ":v5")


def test_delete_without_extra_conditions_has_no_condition():
    p = planned("DELETE FROM t WHERE sk = 1 AND pk = 'k'")
    assert p.kind == "Delete" and p.condition is None and p.names == {} and p.values == ()


def test_exists_is_a_condition_check():
    p = planned("EXISTS(SELECT * FROM t WHERE pk = 'k' AND sk = 1 AND v = 1)")
    assert p.kind == "Exists" and p.checks and p.condition == "attribute_exists(#n0) AND #n1 = :v2"


def test_plans_are_cached_per_key_schema():
    statement = Parser("SELECT * FROM t WHERE pk = 'a'").parse()
    first = plan(statement, entry())
    assert plan(statement, entry()) is first
    assert isinstance(first, ReadPlan) and plan(statement, entry(HASH_ONLY)) is not first


def test_two_sided_sort_key_bounds_add_a_between_variant():
    p = planned("SELECT * FROM t WHERE pk = 'a' AND sk >= 1 AND v = 0 AND sk < 5")
    assert p.key_condition == "#h = :h AND #r >= :v1" and p.range_values == (":v1",)
    assert p.narrow.key_condition == "#h = :h AND #r BETWEEN :v1 AND :v3" and p.narrow.range_values == (":v1", ":v3")
    values = {":v1": {"N": "1"}, ":v2": {"N": "0"}, ":v3": {"N": "5"}}
    assert not p.narrow.filter({"sk": {"N": "5"}, "v": {"N": "0"}}, {}, values)  # sk < 5 stays a filter
    assert p.narrow.filter({"sk": {"N": "4"}, "v": {"N": "0"}}, {}, values)
    assert planned("SELECT * FROM t WHERE pk = 'a' AND sk > 1").narrow is None
    assert planned("SELECT * FROM t WHERE pk = 'a' AND sk > 1 AND sk > 2").narrow is None

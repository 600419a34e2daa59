"""Condition/filter semantics and the static checks on functions and operands."""
import base64
import re

import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


ITEM = {
    "s": {"S": "hello"}, "s2": {"S": "hello"}, "n": {"N": "10"}, "n2": {"N": "9.5"}, "neg": {"N": "-3"},
    "b": {"B": b64(b"\x01\x02\x03")}, "hi": {"B": b64(b"\xff")},
    "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2"]}, "bs": {"BS": [b64(b"\x01")]},
    "l": {"L": [{"S": "x"}, {"N": "1"}, {"SS": ["q"]}, {"M": {"k": {"S": "v"}}}]},
    "m": {"M": {"a": {"N": "1"}, "deep": {"L": [{"S": "z"}]}}},
    "t": {"BOOL": True}, "z": {"NULL": True}, "e": {"S": ""}, "unicode": {"S": "¿"},
}
VALUES = {
    ":s": {"S": "hello"}, ":he": {"S": "he"}, ":ell": {"S": "ell"}, ":x": {"S": "x"}, ":z": {"S": "z"},
    ":n10": {"N": "10"}, ":n10f": {"N": "10.0"}, ":n5": {"N": "5"}, ":n1": {"N": "1"}, ":n2": {"N": "2"},
    ":n20": {"N": "20"}, ":bpre": {"B": b64(b"\x01\x02")}, ":bmid": {"B": b64(b"\x02\x03")},
    ":ss": {"SS": ["b", "a"]}, ":a": {"S": "a"}, ":q": {"SS": ["q"]}, ":m": {"M": {"k": {"S": "v"}}},
    ":true": {"BOOL": True}, ":null": {"NULL": True}, ":tS": {"S": "S"}, ":tSS": {"S": "SS"},
    ":tN": {"S": "N"}, ":tM": {"S": "M"}, ":tNULL": {"S": "NULL"}, ":empty": {"S": ""},
    ":l": {"L": [{"S": "x"}, {"N": "1"}, {"SS": ["q"]}, {"M": {"k": {"S": "v"}}}]},
}


def matches(expression: str, item: dict | None = ITEM, names: dict | None = None) -> bool:
    used = {k: VALUES[k] for k in re.findall(r":\w+", expression)}
    params = {"ConditionExpression": expression}
    if used:
        params["ExpressionAttributeValues"] = {k: dict(v) for k, v in used.items()}
    if names:
        params["ExpressionAttributeNames"] = names
    return compile_request(params, "PutItem").condition.matches(item)


def error(expression: str, values: dict | None = None, param: str = "ConditionExpression") -> str:
    params = {param: expression}
    if values:
        params["ExpressionAttributeValues"] = values
    with pytest.raises(ValidationException) as info:
        compile_request(params, "PutItem" if param == "ConditionExpression" else "Scan")
    return info.value.message


@pytest.mark.parametrize("expression, expected", [
    ("s = :s", True), ("s = s2", True), ("n = :n10f", True), ("n = :n10", True), ("s = :n10", False),
    ("absent = :s", False), ("absent = other_absent", False),
    ("absent <> :s", True), ("absent <> other_absent", True), ("s <> :s", False), ("s <> :n10", True),
    ("ss = :ss", True), ("l = :l", True), ("m.deep[0] = :z", True), ("t = :true", True), ("z = :null", True),
    ("n > :n5", True), ("n >= :n10", True), ("n < :n20", True), ("n <= :n5", False), ("n2 < n", True),
    ("neg < :n1", True), ("s > :he", True), ("unicode > :z", True), ("s < :n10", False), ("ss < :he", False),
    ("b > :bpre", True), ("hi > b", True), ("t < :n5", False), ("l >= :n1", False), ("absent < :n5", False),
    ("n BETWEEN :n5 AND :n20", True), ("n BETWEEN :n10 AND :n10", True), ("n BETWEEN :n1 AND :n5", False),
    ("s BETWEEN :n1 AND :n5", False), ("absent BETWEEN :n1 AND :n5", False), ("n BETWEEN n2 AND :n20", True),
    ("n IN (:n1, :n10)", True), ("n IN (:n1, :n2)", False), ("absent IN (:n1)", False), ("ss IN (:ss)", True),
    ("attribute_exists(z)", True), ("attribute_exists(m.a)", True), ("attribute_exists(m.b)", False),
    ("attribute_exists(l[3].k)", True), ("attribute_exists(l[4])", False), ("attribute_not_exists(absent)", True),
    ("attribute_exists(s.x)", False), ("attribute_exists(m[0])", False),
    ("attribute_type(s, :tS)", True), ("attribute_type(ss, :tSS)", True), ("attribute_type(n, :tN)", True),
    ("attribute_type(m, :tM)", True), ("attribute_type(z, :tNULL)", True), ("attribute_type(s, :tN)", False),
    ("attribute_type(absent, :tS)", False),
    ("begins_with(s, :he)", True), ("begins_with(s, :ell)", False), ("begins_with(b, :bpre)", True),
    ("begins_with(b, :bmid)", False), ("begins_with(n, :he)", False), ("begins_with(s, :empty)", True),
    ("contains(s, :ell)", True), ("contains(b, :bmid)", True), ("contains(ss, :a)", True),
    ("contains(ss, :x)", False), ("contains(ns, :n1)", True), ("contains(ns, :a)", False),
    ("contains(l, :x)", True), ("contains(l, :q)", True), ("contains(l, :m)", True), ("contains(l, :z)", False),
    ("contains(n, :n1)", False), ("contains(absent, :a)", False), ("contains(bs, b)", False),
    ("size(s) = :n5", True), ("size(b) = :n1", False), ("size(ss) = :n2", True), ("size(l) > :n2", True),
    ("size(m) = :n2", True), ("size(n) = :n2", False), ("size(n) <> :n2", True), ("size(absent) < :n20", False),
    ("size(t) >= :n1", False), ("size(e) < :n1", True), ("size(:s) = :n5", True),
    ("NOT s = :s", False), ("NOT absent = :s", True),
    ("s = :s AND n = :n10", True), ("s = :s AND n = :n5", False), ("s = :x OR n = :n10", True),
    ("NOT (s = :x OR n = :n5)", True), ("s = :x OR n = :n5 OR attribute_exists(t)", True),
])
def test_semantics(expression, expected):
    assert matches(expression) is expected


def test_absent_item_is_an_empty_item():
    assert matches("attribute_not_exists(pk)", None)
    assert matches("pk <> :s", None)
    assert not matches("pk = :s", None)


def test_placeholder_paths():
    assert matches("#a.#b[0] = :z", names={"#a": "m", "#b": "deep"})
    assert matches("attribute_exists(#s)", names={"#s": "s"})


def test_top_level_names():
    compiled = compile_request({"FilterExpression": "#a.b = :v AND size(c[1]) > :v OR attribute_exists(d)",
                                "ExpressionAttributeNames": {"#a": "A"}, "ExpressionAttributeValues": {":v": {"N": "1"}}},
                               "Scan")
    assert compiled.filter.top_level == frozenset({"A", "c", "d"})


@pytest.mark.parametrize("expression, value, long_name", [
    ("a < :v", {"L": []}, "LIST"), ("a >= :v", {"M": {}}, "MAP"), ("a > :v", {"SS": ["x"]}, "STRING_SET"),
    ("a <= :v", {"BOOL": True}, "BOOLEAN"), ("a < :v", {"NULL": True}, "NULL"),
    ("a BETWEEN :v AND :v", {"NS": ["1"]}, "NUMBER_SET"),
])
def test_ordering_an_unorderable_value_is_a_validation_error(expression, value, long_name):
    # docs/behaviour/expressions.md §1: the unorderable operand comes from the request, so the request is refused
    op = "BETWEEN" if "BETWEEN" in expression else expression.split()[1]
    assert error(expression, {":v": value}) == ("Invalid ConditionExpression: Incorrect operand type for operator "
                                                f"or function; operator: {op}, operand type: {long_name}")


def test_number_comparison_beyond_integers():
    assert matches("n2 > :n5") and not matches("n2 > :n10")
    item = {"x": {"N": "-0.001"}, "y": {"N": "123456789012345678901234567890.5"}}
    assert matches("x < :n1", item)
    assert matches("y > :n20", item)


# -- static errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("expression, message", [
    ("attribute_exists(a) < :v", "The function is not allowed to be used this way in an expression; function: attribute_exists"),
    ("size(a)", "The function is not allowed to be used this way in an expression; function: size"),
    ("contains(begins_with(a, :v), :v)", "The function is not allowed to be used this way in an expression; function: begins_with"),
    ("if_not_exists(a, :v) = :v", "The function is not allowed to be used this way in an expression; function: if_not_exists"),
    ("list_append(a, :v) = :v", "The function is not allowed to be used this way in an expression; function: list_append"),
    ("foo(a)", "Invalid function name; function: foo"),
    ("size(a, b) > :v", "Incorrect number of operands for operator or function; operator or function: size, number of operands: 2"),
    ("attribute_exists(a, b)", "Incorrect number of operands for operator or function; operator or function: attribute_exists, number of operands: 2"),
    ("begins_with(a)", "Incorrect number of operands for operator or function; operator or function: begins_with, number of operands: 1"),
    ("attribute_exists(:v)", "Operator or function requires a document path; operator or function: attribute_exists"),
    ("attribute_not_exists(size(a))", "Operator or function requires a document path; operator or function: attribute_not_exists"),
    ("a = a", "The first operand must be distinct from the remaining operands for this operator or function; operator: =, first operand: [a]"),
    ("a.b[0] <> a.b[0]", "The first operand must be distinct from the remaining operands for this operator or function; operator: <>, first operand: [a, b, [0]]"),
    ("contains(a, a)", "The first operand must be distinct from the remaining operands for this operator or function; operator: contains, first operand: [a]"),
    ("a BETWEEN b AND a", "The first operand must be distinct from the remaining operands for this operator or function; operator: BETWEEN, first operand: [a]"),
    ("a IN (b, a)", "The first operand must be distinct from the remaining operands for this operator or function; operator: IN, first operand: [a]"),
])
def test_static_function_errors(expression, message):
    assert error(expression, {":v": {"S": "x"}} if ":v" in expression else None) == (
        "Invalid ConditionExpression: " + message)


def test_distinct_check_uses_resolved_names():
    params = {"ConditionExpression": "#x = a", "ExpressionAttributeNames": {"#x": "a"}}
    with pytest.raises(ValidationException, match="operator: =, first operand: \\[a\\]"):
        compile_request(params, "PutItem")


@pytest.mark.parametrize("expression, values, message", [
    ("begins_with(a, :v)", {":v": {"N": "1"}}, "Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"),
    ("begins_with(:v, a)", {":v": {"SS": ["x"]}}, "Incorrect operand type for operator or function; operator or function: begins_with, operand type: SS"),
    ("begins_with(size(a), :v)", {":v": {"S": "1"}}, "Incorrect operand type for operator or function; operator or function: begins_with, operand type: N"),
    ("size(:v) > a", {":v": {"N": "1"}}, "Incorrect operand type for operator or function; operator or function: size, operand type: N"),
    ("size(:v) > a", {":v": {"BOOL": False}}, "Incorrect operand type for operator or function; operator or function: size, operand type: BOOL"),
    ("size(size(a)) > :v", {":v": {"N": "1"}}, "Incorrect operand type for operator or function; operator or function: size, operand type: N"),
    ("attribute_type(a, :v)", {":v": {"N": "1"}}, "Incorrect operand type for operator or function; operator or function: attribute_type, operand type: N"),
    ("attribute_type(a, :v)", {":v": {"S": "X"}}, "Invalid attribute type name found; type: X, valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}"),
    ("a BETWEEN :x AND :y", {":x": {"N": "1"}, ":y": {"S": "a"}}, "The BETWEEN operator requires same data type for lower and upper bounds; lower bound operand: AttributeValue: {N:1}, upper bound operand: AttributeValue: {S:a}"),
    ("a BETWEEN :x AND :y", {":x": {"S": "b"}, ":y": {"S": "a"}}, "The BETWEEN operator requires upper bound to be greater than or equal to lower bound; lower bound operand: AttributeValue: {S:b}, upper bound operand: AttributeValue: {S:a}"),
])
def test_value_dependent_errors(expression, values, message):
    assert error(expression, values) == "Invalid ConditionExpression: " + message


def test_attribute_type_with_path_second_argument_is_rejected():
    assert "attribute_type" in error("attribute_type(a, b)")


def test_filter_expression_errors_name_the_parameter():
    assert error("size(a)", param="FilterExpression").startswith("Invalid FilterExpression: ")


def test_between_with_path_bound_is_not_statically_checked():
    assert matches("n BETWEEN :n5 AND n2") is False

"""ProjectionExpression / AttributesToGet: overlap rules and projection semantics."""
import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request

ITEM = {
    "pk": {"S": "k"},
    "a": {"M": {"b": {"L": [{"N": "0"}, {"M": {"c": {"S": "x"}, "d": {"S": "y"}}}]}, "e": {"S": "z"}}},
    "l": {"L": [{"S": "l0"}, {"S": "l1"}, {"S": "l2"}]},
    "s": {"S": "plain"},
}


def project(expression: str, item: dict = ITEM, names: dict | None = None) -> dict:
    params = {"ProjectionExpression": expression}
    if names:
        params["ExpressionAttributeNames"] = names
    return compile_request(params, "GetItem").projection.apply(item)


def error(expression: str, names: dict | None = None) -> str:
    params = {"ProjectionExpression": expression}
    if names:
        params["ExpressionAttributeNames"] = names
    with pytest.raises(ValidationException) as info:
        compile_request(params, "GetItem")
    return info.value.message


@pytest.mark.parametrize("expression, expected", [
    ("s", {"s": {"S": "plain"}}),
    ("s, pk, absent", {"s": {"S": "plain"}, "pk": {"S": "k"}}),
    ("a.e", {"a": {"M": {"e": {"S": "z"}}}}),
    ("a.b[1].c", {"a": {"M": {"b": {"L": [{"M": {"c": {"S": "x"}}}]}}}}),
    ("a.b[0], a.b[3]", {"a": {"M": {"b": {"L": [{"N": "0"}]}}}}),
    ("l[2], l[0]", {"l": {"L": [{"S": "l0"}, {"S": "l2"}]}}),
    ("a.absent", {}),
    ("s.x", {}),
    ("l.x", {}),
    ("a[0]", {}),
    ("a.b[1].c, a.e, l[1]", {"a": {"M": {"b": {"L": [{"M": {"c": {"S": "x"}}}]}, "e": {"S": "z"}}},
                             "l": {"L": [{"S": "l1"}]}}),
])
def test_projection(expression, expected):
    assert project(expression) == expected


def test_key_attributes_are_not_added():
    assert "pk" not in project("s")


def test_projection_with_names_and_top_level():
    compiled = compile_request({"ProjectionExpression": "#a.#b, s", "ExpressionAttributeNames": {"#a": "a", "#b": "e"}},
                               "GetItem")
    assert compiled.projection.apply(ITEM) == {"a": {"M": {"e": {"S": "z"}}}, "s": {"S": "plain"}}
    assert compiled.projection.top_level == frozenset({"a", "s"})
    assert compiled.projection.paths == [("a", "e"), ("s",)]


def test_projection_does_not_modify_item():
    before = repr(ITEM)
    project("a.b[1].c, l[0]")
    assert repr(ITEM) == before


@pytest.mark.parametrize("expression, message", [
    ("a, a.b", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"),
    ("a.b, a", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a]"),
    ("a, a", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"),
    ("a.b, a[1]", "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, [1]]"),
])
def test_overlap_and_conflict(expression, message):
    assert error(expression) == "Invalid ProjectionExpression: " + message


def test_overlap_through_placeholders():
    assert "path one: [a], path two: [a]" in error("#x, a", {"#x": "a"})


def test_distinct_siblings_are_fine():
    assert project("a.b[0], a.b[1], a.e") == {"a": {"M": {"b": {"L": ITEM["a"]["M"]["b"]["L"]}, "e": {"S": "z"}}}}


def test_attributes_to_get():
    compiled = compile_request({"AttributesToGet": ["s", "a", "nope"]}, "GetItem")
    assert compiled.projection.apply(ITEM) == {"s": ITEM["s"], "a": ITEM["a"]}
    with pytest.raises(ValidationException) as info:
        compile_request({"AttributesToGet": ["s", "a", "s"]}, "GetItem")
    assert info.value.message == "One or more parameter values were invalid: Duplicate value in attribute name: s"


def test_attributes_to_get_names_are_literal():
    compiled = compile_request({"AttributesToGet": ["a.e"]}, "Scan")
    assert compiled.projection.apply({"a.e": {"S": "dot"}, **ITEM}) == {"a.e": {"S": "dot"}}

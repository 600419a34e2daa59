"""UpdateExpression semantics, ReturnValues projections and error messages."""
import copy
import re

import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request

KEYS = frozenset({"pk"})
BASE = {
    "pk": {"S": "k"}, "n": {"N": "5"}, "s": {"S": "str"},
    "l": {"L": [{"S": "l0"}, {"S": "l1"}, {"S": "l2"}, {"S": "l3"}]},
    "m": {"M": {"a": {"N": "1"}, "nest": {"M": {"x": {"S": "y"}}}, "ml": {"L": [{"N": "1"}]}}},
    "ss": {"SS": ["a", "b"]}, "ns": {"NS": ["1", "2"]},
}
VALUES = {
    ":one": {"N": "1"}, ":v": {"S": "v"}, ":w": {"S": "w"}, ":x": {"S": "x"}, ":big": {"N": "9e125"},
    ":l": {"L": [{"S": "new"}]}, ":m": {"M": {"q": {"N": "1"}}}, ":ssc": {"SS": ["b", "c"]},
    ":nsx": {"NS": ["2", "3"]}, ":ssab": {"SS": ["a", "b"]}, ":ss_a": {"SS": ["a"]}, ":s": {"S": "s"},
    ":bs": {"BS": ["AQ=="]}, ":n2": {"N": "2.50"},
}


def compile_update(expression: str, names: dict | None = None):
    params = {"UpdateExpression": expression}
    used = {k: copy.deepcopy(VALUES[k]) for k in re.findall(r":\w+", expression)}
    if used:
        params["ExpressionAttributeValues"] = used
    if names:
        params["ExpressionAttributeNames"] = names
    return compile_request(params, "UpdateItem").update


def apply(expression: str, item: dict | None = BASE, names: dict | None = None):
    return compile_update(expression, names).apply(item, KEYS)


def new(expression: str, item: dict | None = BASE, names: dict | None = None) -> dict | None:
    return apply(expression, item, names).item


def error(expression: str, item: dict | None = BASE) -> str:
    with pytest.raises(ValidationException) as info:
        apply(expression, item)
    return info.value.message


def with_(**changes) -> dict:
    out = dict(BASE)
    for k, v in changes.items():
        if v is None:
            out.pop(k)
        else:
            out[k] = v
    return out


# -- SET ------------------------------------------------------------------------------------------

def test_set_values_and_arithmetic():
    assert new("SET n = n + :one") == with_(n={"N": "6"})
    assert new("SET n = :one - n") == with_(n={"N": "-4"})
    assert new("SET a = :v, b = n") == with_(a={"S": "v"}, b={"N": "5"})
    assert new("SET n = n + :n2") == with_(n={"N": "7.5"})


def test_set_reads_the_original_item():
    assert new("SET a = n, n = :one") == with_(a={"N": "5"}, n={"N": "1"})
    assert new("SET s = n, n = s") == with_(s={"N": "5"}, n={"S": "str"})


def test_set_nested_paths():
    assert new("SET m.a = :v")["m"]["M"]["a"] == {"S": "v"}
    assert new("SET m.nest.z = :v")["m"]["M"]["nest"] == {"M": {"x": {"S": "y"}, "z": {"S": "v"}}}
    assert new("SET l[1] = :v")["l"]["L"][1] == {"S": "v"}
    assert new("SET m.ml[0] = :v")["m"]["M"]["ml"] == {"L": [{"S": "v"}]}


def test_set_past_end_appends_in_index_order():
    assert new("SET l[10] = :v")["l"]["L"][-1] == {"S": "v"}
    result = new("SET l[20] = :w, l[9] = :v")["l"]["L"]
    assert result[4:] == [{"S": "v"}, {"S": "w"}]


def test_set_functions():
    assert new("SET a = if_not_exists(a, :v), n = if_not_exists(n, :one)") == with_(a={"S": "v"})
    assert new("SET l = list_append(l, :l)")["l"]["L"][-1] == {"S": "new"}
    assert new("SET l = list_append(:l, l)")["l"]["L"][0] == {"S": "new"}
    assert new("SET z = list_append(if_not_exists(z, :l), :l)")["z"] == {"L": [{"S": "new"}, {"S": "new"}]}
    assert new("SET n = if_not_exists(absent, n) + :one")["n"] == {"N": "6"}
    assert new("SET x = if_not_exists(m.nope.deeper, :v)")["x"] == {"S": "v"}


def test_set_with_placeholders():
    assert new("SET #c = #c + :one", names={"#c": "n"})["n"] == {"N": "6"}


def test_input_item_is_never_mutated():
    before = copy.deepcopy(BASE)
    apply("SET m.nest.x = :v, l[0] = :w, m.ml[5] = :x ADD ss :ssc, n :one DELETE ns :nsx REMOVE l[2], s")
    assert before == BASE


def test_untouched_parts_are_shared():
    result = new("SET m.a = :v")
    assert result["l"] is BASE["l"]
    assert result["m"]["M"]["nest"] is BASE["m"]["M"]["nest"]


@pytest.mark.parametrize("expression, message", [
    ("SET absent.x = :v", "The document path provided in the update expression is invalid for update"),
    ("SET s.x = :v", "The document path provided in the update expression is invalid for update"),
    ("SET m[0] = :v", "The document path provided in the update expression is invalid for update"),
    ("SET l.x = :v", "The document path provided in the update expression is invalid for update"),
    ("SET a = absent", "The provided expression refers to an attribute that does not exist in the item"),
    ("SET a = absent + :one", "The provided expression refers to an attribute that does not exist in the item"),
    ("SET a = list_append(absent, :l)", "The provided expression refers to an attribute that does not exist in the item"),
    ("SET a = s + :one", "An operand in the update expression has an incorrect data type"),
    ("SET a = list_append(s, :l)", "An operand in the update expression has an incorrect data type"),
    ("SET n = n + :big", "Number overflow. Attempting to store a number with magnitude larger than supported range"),
])
def test_runtime_errors(expression, message):
    assert error(expression) == message


def test_set_nested_on_absent_item_is_invalid():
    assert error("SET m.a = :v", None) == "The document path provided in the update expression is invalid for update"


# -- REMOVE --------------------------------------------------------------------------------------------

def test_remove():
    assert new("REMOVE s, absent") == with_(s=None)
    assert new("REMOVE m.a")["m"]["M"].keys() == {"nest", "ml"}
    assert new("REMOVE l[1], l[3]")["l"] == {"L": [{"S": "l0"}, {"S": "l2"}]}
    assert new("REMOVE l[3], l[1]")["l"] == {"L": [{"S": "l0"}, {"S": "l2"}]}
    assert new("REMOVE l[9]")["l"] == BASE["l"]
    assert new("REMOVE m.ml[0]")["m"]["M"]["ml"] == {"L": []}
    assert new("REMOVE m.nest.x")["m"]["M"]["nest"] == {"M": {}}


def test_remove_indexes_refer_to_original_positions_with_set():
    result = new("SET l[1] = :v, l[9] = :w REMOVE l[0], l[4]")["l"]["L"]
    assert result == [{"S": "v"}, {"S": "l2"}, {"S": "l3"}, {"S": "w"}]


def test_remove_under_missing_parent():
    assert error("REMOVE absent.y") == "The document path provided in the update expression is invalid for update"
    assert error("REMOVE s[0]") == "The document path provided in the update expression is invalid for update"
    assert apply("REMOVE absent.y", None).item is None


def test_upsert_starts_from_the_key():
    update = compile_update("SET a = pk")
    assert update.apply(None, KEYS, {"pk": {"S": "new"}}).item == {"pk": {"S": "new"}, "a": {"S": "new"}}
    assert compile_update("REMOVE a").apply(None, KEYS, {"pk": {"S": "new"}}).item is None
    assert compile_update("SET b = :v").apply(None, KEYS).item == {"b": {"S": "v"}}


def test_removal_only_update_does_not_create_item():
    assert apply("REMOVE a", None).item is None
    assert apply("DELETE ss :ss_a", None).item is None
    assert apply("SET a = :v", None).item == {"a": {"S": "v"}}
    assert apply("ADD n :one", None).item == {"n": {"N": "1"}}


# -- ADD / DELETE ------------------------------------------------------------------------------------

def test_add():
    assert new("ADD n :one")["n"] == {"N": "6"}
    assert new("ADD fresh :one")["fresh"] == {"N": "1"}
    assert sorted(new("ADD ss :ssc")["ss"]["SS"]) == ["a", "b", "c"]
    assert sorted(new("ADD ns :nsx")["ns"]["NS"]) == ["1", "2", "3"]
    assert new("ADD fresh :ssc")["fresh"] == {"SS": ["b", "c"]}
    assert new("ADD m.a :one")["m"]["M"]["a"] == {"N": "2"}
    assert error("ADD s :one") == "An operand in the update expression has an incorrect data type"
    assert error("ADD ss :nsx") == "An operand in the update expression has an incorrect data type"
    assert error("ADD absent.x :one") == "The document path provided in the update expression is invalid for update"


def test_delete():
    assert new("DELETE ss :ssc")["ss"] == {"SS": ["a"]}
    assert new("DELETE ss :ssab") == with_(ss=None)
    assert new("DELETE absent :ssc") == BASE
    assert new("DELETE ns :nsx")["ns"] == {"NS": ["1"]}
    assert error("DELETE ss :nsx") == "An operand in the update expression has an incorrect data type"
    assert error("DELETE s :ssc") == "An operand in the update expression has an incorrect data type"


# -- key attributes ------------------------------------------------------------------------------------

def test_key_attributes_cannot_be_updated():
    for expression in ("SET pk = :v", "REMOVE pk", "ADD pk :one", "DELETE pk :ssc"):
        assert error(expression) == "One or more parameter values were invalid: Cannot update attribute pk. This attribute is part of the key"
    assert error("SET pk.x = :v") == (
        "Key attributes must be scalars; list random access '[]' and map lookup '.' are not allowed: Key: pk")


# -- ReturnValues ----------------------------------------------------------------------------------------

def test_updated_old_and_new():
    result = apply("SET n = n + :one, m.nest.x = :v, fresh = :w REMOVE s, absent ADD ss :ssc")
    assert result.updated_old(BASE) == {"n": {"N": "5"}, "m": {"M": {"nest": {"M": {"x": {"S": "y"}}}}},
                                        "s": {"S": "str"}, "ss": BASE["ss"]}
    updated = result.updated_new(result.item)
    assert updated["n"] == {"N": "6"} and updated["fresh"] == {"S": "w"}
    assert updated["m"] == {"M": {"nest": {"M": {"x": {"S": "v"}}}}}
    assert sorted(updated["ss"]["SS"]) == ["a", "b", "c"] and "s" not in updated


def test_updated_new_reports_appended_elements_and_removed_lists():
    result = apply("SET l[10] = :v")
    assert result.updated_new(result.item) == {"l": {"L": [{"S": "v"}]}}
    assert result.updated_old(BASE) == {}
    result = apply("REMOVE l[0]")
    assert result.updated_new(result.item) == {}
    assert result.updated_old(BASE) == {"l": {"L": [{"S": "l0"}]}}


# -- static errors --------------------------------------------------------------------------------------

def static_error(expression: str, names: dict | None = None) -> str:
    with pytest.raises(ValidationException) as info:
        compile_update(expression, names)
    return info.value.message


@pytest.mark.parametrize("expression, message", [
    ("SET a = :v, a.b = :w", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a, b]"),
    ("SET a = :v REMOVE a", "Two document paths overlap with each other; must remove or rewrite one of these paths; path one: [a], path two: [a]"),
    ("SET a.b = :v REMOVE a[1]", "Two document paths conflict with each other; must remove or rewrite one of these paths; path one: [a, b], path two: [a, [1]]"),
    ("SET a = size(b)", "Invalid function name; function: size"),
    ("SET a = attribute_exists(b)", "Invalid function name; function: attribute_exists"),
    ("SET a = list_append(:l)", "Incorrect number of operands for operator or function; operator or function: list_append, number of operands: 1"),
    ("SET a = if_not_exists(:v, a)", "Operator or function requires a document path; operator or function: if_not_exists"),
    ("SET a = list_append(:v, a)", "Incorrect operand type for operator or function; operator or function: list_append, operand type: S"),
    ("SET a = :v + :one", "Incorrect operand type for operator or function; operator: +, operand type: STRING"),
    ("SET a = :one - list_append(a, b)", "Incorrect operand type for operator or function; operator: -, operand type: LIST"),
    ("ADD a :v", "Incorrect operand type for operator or function; operator: ADD, operand type: STRING, typeSet: ALLOWED_FOR_ADD_OPERAND"),
    ("ADD a :l", "Incorrect operand type for operator or function; operator: ADD, operand type: LIST, typeSet: ALLOWED_FOR_ADD_OPERAND"),
    ("DELETE a :one", "Incorrect operand type for operator or function; operator: DELETE, operand type: NUMBER, typeSet: ALLOWED_FOR_DELETE_OPERAND"),
    ("SET a = :v, b = :w SET c = :x", 'The "SET" section can only be used once in an update expression;'),
    ("SET status = :v", "Attribute name is a reserved keyword; reserved keyword: status"),
])
def test_static_errors(expression, message):
    assert static_error(expression) == "Invalid UpdateExpression: " + message


def test_overlap_through_placeholders():
    assert "path one: [a], path two: [a]" in static_error("SET #a = :v, a = :w", {"#a": "a"})


def test_reading_a_written_path_is_fine():
    result = compile_update("SET a = a + :one, b = list_append(b, :l)").apply(
        {"pk": {"S": "k"}, "a": {"N": "1"}, "b": {"L": []}}, KEYS)
    assert result.item == {"pk": {"S": "k"}, "a": {"N": "2"}, "b": {"L": [{"S": "new"}]}}


def test_empty_set_values_are_rejected():
    with pytest.raises(ValidationException, match="may not be empty"):
        compile_request({"UpdateExpression": "SET a = :e", "ExpressionAttributeValues": {":e": {"SS": []}}}, "UpdateItem")


def test_integer_fast_path_matches_decimal_arithmetic():
    from dynalocal.expressions.update import add_numbers, subtract_numbers
    nines = "9" * 38
    assert add_numbers(nines, "1") == "1" + "0" * 38
    assert add_numbers("-5", "3") == "-2" and subtract_numbers("3", "3") == "0"
    assert add_numbers("1.5", "-0.5") == "1" and subtract_numbers("-7", "-10") == "3"
    with pytest.raises(ValidationException, match="Number overflow"):
        add_numbers(nines, "0.1")

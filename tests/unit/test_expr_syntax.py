"""Lexer/parser rules of the expression language and their exact DynamoDB messages."""
import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions import compile_request
from dynalocal.expressions.lexer import ATTR_NAME, ATTR_VALUE, EOF, ILLEGAL, INT, NAME, PUNCT, tokenize
from dynalocal.expressions.parser import parse_condition, parse_projection, parse_update


def error(params: dict, operation: str = "Scan") -> str:
    with pytest.raises(ValidationException) as info:
        compile_request(params, operation)
    return info.value.message


def cond(text: str) -> object:
    return parse_condition(text, "ConditionExpression").tree


def cond_error(text: str) -> str:
    with pytest.raises(ValidationException) as info:
        parse_condition(text, "ConditionExpression")
    return info.value.message


def update_error(text: str) -> str:
    with pytest.raises(ValidationException) as info:
        parse_update(text)
    return info.value.message


# -- lexer ------------------------------------------------------------------------------------

def test_tokens_kinds_and_positions():
    toks = tokenize("a.b[10] <= #n AND :v<>x")
    assert [(t.kind, t.text) for t in toks] == [
        (NAME, "a"), (PUNCT, "."), (NAME, "b"), (PUNCT, "["), (INT, "10"), (PUNCT, "]"), (PUNCT, "<="),
        (ATTR_NAME, "#n"), (NAME, "AND"), (ATTR_VALUE, ":v"), (PUNCT, "<>"), (NAME, "x"), (EOF, "<EOF>")]
    assert toks[4].start == 4 and toks[4].end == 6


def test_lone_sigils_and_unknown_characters_are_illegal_tokens():
    assert [(t.kind, t.text) for t in tokenize("# : _ $ é")][:-1] == [
        (ILLEGAL, "#"), (ILLEGAL, ":"), (ILLEGAL, "_"), (ILLEGAL, "$"), (ILLEGAL, "é")]


def test_placeholders_may_start_with_digit_or_underscore():
    assert [t.kind for t in tokenize("#123 #_ :0")][:-1] == [ATTR_NAME, ATTR_NAME, ATTR_VALUE]


# -- syntax errors ------------------------------------------------------------------------------

@pytest.mark.parametrize("text, message", [
    ("foo", 'Syntax error; token: "<EOF>", near: "foo"'),
    ("a+:delta", 'Syntax error; token: "+", near: "a+:delta"'),
    ("a = ", 'Syntax error; token: "<EOF>", near: "="'),
    ("a = b = c", 'Syntax error; token: "=", near: "b = c"'),
    ("(a = b", 'Syntax error; token: "<EOF>", near: "b"'),
    ("a = b)", 'Syntax error; token: ")", near: "b)"'),
    ("()", 'Syntax error; token: ")", near: "()"'),
    ("a[:i] = b", 'Syntax error; token: ":i", near: "[:i]"'),
    ("a[#i] = b", 'Syntax error; token: "#i", near: "[#i]"'),
    ("a[-1] = b", 'Syntax error; token: "-", near: "[-1"'),
    ("a = :v AND", 'Syntax error; token: "<EOF>", near: "AND"'),
    ("a BETWEEN :x OR :y", 'Syntax error; token: "OR", near: ":x OR :y"'),
    ("a IN ()", 'Syntax error; token: ")", near: "()"'),
    ("attribute_exists()", 'Syntax error; token: ")", near: "()"'),
    ("_a = b", 'Syntax error; token: "_", near: "_a"'),
    ("a.1 = b", 'Syntax error; token: "1", near: ".1 ="'),
    ("a = #", 'Syntax error; token: "#", near: "= #"'),
    (":v", 'Syntax error; token: "<EOF>", near: ":v"'),
    ("a = b AND OR c = d", 'Syntax error; token: "OR", near: "AND OR c"'),
])
def test_condition_syntax_errors(text, message):
    assert cond_error(text) == "Invalid ConditionExpression: " + message


@pytest.mark.parametrize("text, message", [
    ("SET _123 = :v", 'Syntax error; token: "_", near: "SET _123"'),
    ("SET a = :v,", 'Syntax error; token: "<EOF>", near: ","'),
    ("SET a = num_val badvalue", 'Syntax error; token: "badvalue", near: "num_val badvalue"'),
    ("HELLO a = :v", 'Syntax error; token: "HELLO", near: "HELLO a"'),
    ("SET a = :a + :b + :c", 'Syntax error; token: "+", near: ":b + :c"'),
    ("SET a = f(x + y)", 'Syntax error; token: "+", near: "x + y"'),
    ("SET a", 'Syntax error; token: "<EOF>", near: "a"'),
    ("REMOVE a = :v", 'Syntax error; token: "=", near: "a = :v"'),
    ("ADD a b", 'Syntax error; token: "b", near: "a b"'),
    ("SET", 'Syntax error; token: "<EOF>", near: "SET"'),
])
def test_update_syntax_errors(text, message):
    assert update_error(text) == "Invalid UpdateExpression: " + message


@pytest.mark.parametrize("text", ["a,", ",a", "a,,b", "size(a)", "a = b"])
def test_projection_syntax_errors(text):
    with pytest.raises(ValidationException, match=r"^Invalid ProjectionExpression: Syntax error; token: "):
        parse_projection(text)


def test_empty_and_oversized_expressions():
    assert error({"FilterExpression": ""}) == "Invalid FilterExpression: The expression can not be empty;"
    assert error({"ProjectionExpression": ""}, "GetItem") == "Invalid ProjectionExpression: The expression can not be empty;"
    assert cond_error("a" * 4097) == (
        "Invalid ConditionExpression: Expression size has exceeded the maximum allowed size; expression size: 4097")
    exact = "a = b AND " + "c" * (4096 - 14) + " = d"
    assert len(exact) == 4096
    parse_condition(exact, "ConditionExpression")


def test_multibyte_expression_size_counts_bytes():
    text = "a = b AND #n = :v" + " " * (4096 - 17 - 1) + "é"  # é is 2 bytes
    assert len(text.encode()) == 4097
    assert "expression size: 4097" in cond_error(text)


# -- precedence, keywords, parentheses -----------------------------------------------------------

def test_precedence():
    a_lt_b = A.Compare("<", A.Path(("a",)), A.Path(("b",)))
    c_lt_b = A.Compare("<", A.Path(("c",)), A.Path(("b",)))
    assert cond("NOT a < b AND c < b") == A.And((A.Not(a_lt_b), c_lt_b))
    x, y, z = (A.Compare("=", A.Path((n,)), A.Value(":v")) for n in "xyz")
    assert cond("x = :v OR y = :v AND z = :v") == A.Or((x, A.And((y, z))))
    assert cond("(x = :v OR y = :v) AND z = :v") == A.And((A.Or((x, y)), z))
    between = A.Between(A.Path(("b",)), A.Path(("a",)), A.Path(("c",)))
    assert cond("b BETWEEN a AND c AND a < b") == A.And((between, A.Compare("<", A.Path(("a",)), A.Path(("b",)))))
    assert cond("NOT NOT x = :v") == A.Not(A.Not(x))


def test_and_or_chains_are_flat():
    tree = cond("a = :v AND b = :v AND c = :v OR d = :v")
    assert isinstance(tree, A.Or) and len(tree.items) == 2 and len(tree.items[0].items) == 3


def test_keywords_case_insensitive_functions_case_sensitive():
    assert isinstance(cond("a = :v and b = :v"), A.And)
    assert isinstance(cond("a between :x AnD :y"), A.Between)
    assert isinstance(cond("a in (:x)"), A.In)
    assert error({"FilterExpression": "BegIns_WiTh(a, :v)", "ExpressionAttributeValues": {":v": {"S": "x"}}}) == (
        "Invalid FilterExpression: Invalid function name; function: BegIns_WiTh")


def test_redundant_parentheses():
    cond("(a < b)")
    cond("((a < b) AND c < d)")
    cond("(NOT (a < b))")
    assert cond_error("((a < b))") == "Invalid ConditionExpression: The expression has redundant parentheses;"
    assert cond_error("x = y AND ((a < b))") == "Invalid ConditionExpression: The expression has redundant parentheses;"
    assert cond_error("(" * 2000 + "a < b" + ")" * 2000) == (
        "Invalid ConditionExpression: The expression has redundant parentheses;")


def test_deep_unbalanced_parentheses_are_a_syntax_error_not_a_crash():
    assert cond_error("(" * 4000).startswith('Invalid ConditionExpression: Syntax error; token: "<EOF>"')


def test_operator_limit():
    ok = " AND ".join(["a = b"] * 150)  # 150 comparisons + 149 ANDs
    parse_condition(ok, "ConditionExpression")
    too_many = " AND ".join(["a = b"] * 151)
    assert cond_error(too_many) == (
        "Invalid ConditionExpression: The expression contains too many operators; operator count: 301")
    assert "too many operators" in cond_error("NOT " * 400 + "a = b")


def test_nested_function_calls_are_bounded():
    text = "SET a = " + "f(" * 1000 + ":v" + ")" * 1000
    assert "too many operators" in update_error(text)


def test_in_operand_limit():
    ok = "a IN (" + ", ".join(f":v{i}" for i in range(100)) + ")"
    parse_condition(ok, "ConditionExpression")
    assert cond_error("a IN (" + ", ".join(f":v{i}" for i in range(101)) + ")") == (
        "Invalid ConditionExpression: The IN operator is provided with too many operands; number of operands: 101")


# -- names and paths -----------------------------------------------------------------------------

def test_reserved_words_rejected_case_insensitively_and_echoed():
    assert cond_error("Status = :v") == (
        "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: Status")
    assert cond_error("a.data = :v") == (
        "Invalid ConditionExpression: Attribute name is a reserved keyword; reserved keyword: data")
    cond("#status = :v")
    cond("remove = :v")  # REMOVE is a clause keyword, not reserved
    parse_update("SET size1 = :v")


def test_syntax_error_wins_over_reserved_word():
    assert "Syntax error" in cond_error("status = ")


def test_function_names_are_not_reserved_checked():
    compiled = compile_request({"ConditionExpression": "size(a) > :v", "ExpressionAttributeValues": {":v": {"N": "2"}}},
                               "PutItem")  # `size` is a reserved word, yet fine as a function name
    assert compiled.condition.matches({"a": {"S": "abc"}}) and not compiled.condition.matches({"a": {"S": "ab"}})


def test_paths_parse_to_elements():
    tree = cond("a.#b[3][0].c = :v")
    assert tree.left == A.Path(("a", "#b", 3, 0, "c"))


def test_list_index_range():
    assert parse_projection("a[2147483647]").tree[0].elements == ("a", 2147483647)
    with pytest.raises(ValidationException) as info:
        parse_projection("a[99999999999999]")
    assert info.value.message == (
        "Invalid ProjectionExpression: List index is not within the allowable range; index: [99999999999999]")


def test_path_nesting_limit():
    parse_projection(".".join(["a"] * 32))
    with pytest.raises(ValidationException) as info:
        parse_projection(".".join(["a"] * 33))
    assert info.value.message == (
        "Invalid ProjectionExpression: The document path has too many nesting levels; nesting levels: 33")


# -- update clauses ---------------------------------------------------------------------------------

def test_update_clauses_any_order_case_insensitive():
    tree = parse_update("remove x, y set a = :v, b = b + :one add c :n delete d :s").tree
    assert [(a.clause, a.path.elements) for a in tree.actions] == [
        ("REMOVE", ("x",)), ("REMOVE", ("y",)), ("SET", ("a",)), ("SET", ("b",)), ("ADD", ("c",)), ("DELETE", ("d",))]
    assert tree.actions[3].value == A.Arith("+", A.Path(("b",)), A.Value(":one"))


def test_update_clause_only_once():
    assert update_error("SET a = :v SET b = :w") == (
        'Invalid UpdateExpression: The "SET" section can only be used once in an update expression;')
    assert update_error("remove a ADD b :v REMOVE c") == (
        'Invalid UpdateExpression: The "REMOVE" section can only be used once in an update expression;')


def test_update_function_arguments_nest():
    tree = parse_update("SET a = list_append(if_not_exists(a, :e), :l) + :n").tree
    value = tree.actions[0].value
    assert isinstance(value, A.Arith) and value.left.name == "list_append"

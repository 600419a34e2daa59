"""PartiQL lexer and parser: every statement form, every literal, precedence and the errors."""
from __future__ import annotations

import pytest

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.partiql.ast import Composite, Delete, Exists, Insert, Param, Select, Update, build
from dynalocal.expressions.partiql.lexer import tokenize
from dynalocal.expressions.partiql.parser import Parser, parse_statement


def parse(text: str):
    return Parser(text).parse()


def p(*elements) -> A.Path:
    return A.Path(tuple(elements), placeholders=False)


def v(i: int) -> A.Value:
    return A.Value(f":v{i}")


def error(text: str) -> str:
    with pytest.raises(ValidationException) as info:
        parse(text)
    return info.value.message


# -- lexer ----------------------------------------------------------------------------------------

def test_lexer_unescapes_quotes_and_tracks_positions():
    toks = tokenize("SELECT \"a\"\"b\" FROM t\nWHERE x = 'it''s'")
    assert [(t.kind, t.text) for t in toks[:2]] == [("IDENT", "SELECT"), ("QUOTED", 'a"b')]
    string = [t for t in toks if t.kind == "STRING"][0]
    assert string.text == "it's" and (string.line, string.column) == (2, 11)


def test_comments():
    st = parse("SELECT /* all\n of it */ * FROM t -- the table\nWHERE a = 1")
    assert st.tree.where == A.Compare("=", p("a"), v(0))
    assert tokenize("/* x\n*/ a")[0].line == 2
    assert error("SELECT * /* open") == "Statement wasn't well formed, can't be processed: Unterminated comment at 1:10"


def test_lexer_operators_and_numbers():
    texts = [t.text for t in tokenize("<< >> <= >= <> != 1.5e3 .5 -- comment")][:-1]
    assert texts == ["<<", ">>", "<=", ">=", "<>", "!=", "1.5e3", ".5"]


# -- statement forms ------------------------------------------------------------------------------

def test_select_star_with_where_and_order():
    st = parse('SELECT * FROM "Music" WHERE Artist = ? AND "Year" > 2000 ORDER BY "Year" DESC')
    assert st.tree == Select("Music", None, None, A.And((A.Compare("=", p("Artist"), v(0)),
                                                           A.Compare(">", p("Year"), v(1)))), (("Year", True),))
    assert st.slots == [Param(0), {"N": "2000"}] and st.params == 1 and st.is_read


def test_select_projection_index_and_nested_paths():
    st = parse("SELECT a, m.x[0], \"odd name\", m['k'] FROM t.\"my-index\"")
    assert st.tree.index == "my-index" and st.tree.where is None
    assert st.tree.projection == (p("a"), p("m", "x", 0), p("odd name"), p("m", "k"))


def test_order_by_asc_and_several_keys():
    assert parse("SELECT * FROM t WHERE a = 1 ORDER BY a ASC, b").tree.order == (("a", False), ("b", False))


def test_insert_update_delete_exists():
    ins = parse("INSERT INTO t VALUE {'pk': 'a', 'n': 1}").tree
    assert isinstance(ins, Insert) and ins.item == v(0)
    upd = parse("UPDATE t SET a = 1, b = b + 2 SET c = list_append(c, [1]) REMOVE d, e.f "
                "WHERE pk = 'x' RETURNING MODIFIED NEW *").tree
    assert isinstance(upd, Update) and upd.returning == "UPDATED_NEW"
    assert [a.clause for a in upd.actions] == ["SET", "SET", "SET", "REMOVE", "REMOVE"]
    assert upd.actions[1].value == A.Arith("+", p("b"), v(1))
    assert upd.actions[2].value == A.Call("list_append", (p("c"), v(2)))
    assert upd.actions[4].path == p("e", "f")
    dele = parse("DELETE FROM t WHERE pk = 'x' RETURNING ALL OLD *;").tree
    assert isinstance(dele, Delete) and dele.returning == "ALL_OLD"
    ex = parse("EXISTS(SELECT * FROM t WHERE pk = 'x' AND v = 1)").tree
    assert isinstance(ex, Exists) and not ex.negated
    assert parse("NOT EXISTS (SELECT * FROM t WHERE pk = 'x')").tree.negated


@pytest.mark.parametrize("returning,mode", [("ALL OLD", "ALL_OLD"), ("MODIFIED OLD", "UPDATED_OLD"),
                                            ("ALL NEW", "ALL_NEW"), ("modified new", "UPDATED_NEW")])
def test_update_returning_modes(returning, mode):
    assert parse(f"UPDATE t SET a = 1 WHERE pk = 'x' RETURNING {returning} *").tree.returning == mode


def test_set_add_and_set_delete_become_add_and_delete_actions():
    actions = parse("UPDATE t SET s = set_add(s, <<'a'>>) SET n = SET_DELETE(n, <<1>>) WHERE pk = 'x'").tree.actions
    assert actions == (A.Action("ADD", p("s"), v(0)), A.Action("DELETE", p("n"), v(1)))


def test_keywords_are_case_insensitive_names_are_not():
    st = parse("select * from T where PK = 'a'")
    assert st.tree.where == A.Compare("=", p("PK"), v(0))


# -- literals -------------------------------------------------------------------------------------

@pytest.mark.parametrize("literal,av", [
    ("'x'", {"S": "x"}), ("''", {"S": ""}), ("1", {"N": "1"}), ("-1.50", {"N": "-1.5"}), ("+2", {"N": "2"}),
    ("1e3", {"N": "1000"}), ("true", {"BOOL": True}), ("FALSE", {"BOOL": False}), ("null", {"NULL": True}),
    ("<<'a', 'b'>>", {"SS": ["a", "b"]}), ("<<1, 2>>", {"NS": ["1", "2"]}),
    ("[1, 'a', [true]]", {"L": [{"N": "1"}, {"S": "a"}, {"L": [{"BOOL": True}]}]}), ("[]", {"L": []}),
    ("{'k': {'n': null}}", {"M": {"k": {"M": {"n": {"NULL": True}}}}}), ("{}", {"M": {}}),
])
def test_literals(literal, av):
    assert parse(f"SELECT * FROM t WHERE a = {literal}").slots == [av]


def test_parameters_inside_composites_are_built_per_request():
    st = parse("INSERT INTO t VALUE {'pk': ?, 'l': [?, 1], 's': <<?>>}")
    assert st.params == 3 and isinstance(st.slots[0], Composite)
    params = [{"S": "k"}, {"BOOL": True}, {"N": "5"}]
    assert build(st.slots[0], params) == {"M": {"pk": {"S": "k"}, "l": {"L": [{"BOOL": True}, {"N": "1"}]},
                                                "s": {"NS": ["5"]}}}
    assert st.values(params)[":v0"]["M"]["pk"] == {"S": "k"}


# -- conditions and precedence --------------------------------------------------------------------

def test_precedence_or_and_not():
    where = parse("SELECT * FROM t WHERE a = 1 OR NOT b = 2 AND c = 3").tree.where
    assert where == A.Or((A.Compare("=", p("a"), v(0)),
                          A.And((A.Not(A.Compare("=", p("b"), v(1))), A.Compare("=", p("c"), v(2))))))


def test_parentheses_group():
    where = parse("SELECT * FROM t WHERE (a = 1 OR b = 2) AND c <> 3").tree.where
    assert where == A.And((A.Or((A.Compare("=", p("a"), v(0)), A.Compare("=", p("b"), v(1)))),
                           A.Compare("<>", p("c"), v(2))))


def test_predicates():
    where = parse("SELECT * FROM t WHERE a BETWEEN 1 AND 2 AND b IN [1, 2] AND c IN (3) AND d NOT IN [4] "
                  "AND e NOT BETWEEN 5 AND 6 AND f != 7 AND begins_with(g, 'x') AND contains(h, 'y') "
                  "AND attribute_type(i, 'S') AND size(j) >= 2 AND k IS MISSING AND l IS NOT MISSING "
                  "AND m IS NULL AND n IS NOT NULL").tree.where
    items = where.items
    assert items[0] == A.Between(p("a"), v(0), v(1))
    assert items[1] == A.In(p("b"), (v(2), v(3))) and items[2] == A.In(p("c"), (v(4),))
    assert items[3] == A.Not(A.In(p("d"), (v(5),))) and items[4] == A.Not(A.Between(p("e"), v(6), v(7)))
    assert items[5] == A.Compare("<>", p("f"), v(8))
    assert items[6] == A.Call("begins_with", (p("g"), v(9)))
    assert items[8] == A.Call("attribute_type", (p("i"), v(11)))
    assert items[9] == A.Compare(">=", A.Call("size", (p("j"),)), v(12))
    assert items[10] == A.Call("attribute_not_exists", (p("k"),))
    assert items[11] == A.Call("attribute_exists", (p("l"),))
    assert items[12] == A.Call("attribute_type", (p("m"), v(13))) and items[13] == A.Not(A.Call("attribute_type", (p("n"), v(14))))


# -- errors ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("text,token", [
    ("SELECT * FROM t WHERE", "'<EOF>' at 1:22:0"),
    ("SELECT * FROM t WHERE a == 1", "'==' at 1:25:2"),
    ("SELECT * FRM t", "'FRM' at 1:10:3"),
    ("SELECT * FROM t WHERE a = 1 AND", "'<EOF>'"),
    ("SELECT COUNT(*) FROM t", "'COUNT' at 1:8:5"),
    ("SELECT * FROM t WHERE value = 1", "'value' at 1:23:5"),
    ("UPDATE t WHERE pk = 1", "'WHERE'"),
    ("INSERT INTO t VALUE {'a': 1} WHERE a = 1", "'WHERE'"),
    ("SELECT * FROM t WHERE a = 1 extra", "'extra'"),
])
def test_syntax_errors_name_the_offending_token(text, token):
    message = error(text)
    assert message.startswith("Statement wasn't well formed, can't be processed: Unexpected token ")
    assert token in message


@pytest.mark.parametrize("text,message", [
    ("SELECT * FROM t WHERE a = 'x", "Statement wasn't well formed, can't be processed: Unterminated quoted string at 1:27"),
    ("SELECT * FROM t WHERE a = MISSING", "MISSING must be compared using IS operator"),
    ("SELECT * FROM t WHERE a = 1 + 1", "Unsupported operator in Condition Expression. Operator: +"),
    ("SELECT * FROM t WHERE foo(a)", "Unrecognized function: foo"),
    ("SELECT * FROM t WHERE size(a, b) = 1", "Incorrect number of arguments for function: size"),
    ("SELECT * FROM t, u", "Only select from a single table or index is supported."),
    ("SELECT * FROM t WHERE a = 1 LIMIT 1", "Unsupported clause: LIMIT at 1:29:5"),
    ("SELECT * FROM t WHERE a = `1`", "Ion Literals are not supported: at 1:27:3"),
    ("SELECT * FROM t WHERE a = <<1, 'a'>>", "Unsupported data type in Bag. DynamoDB only supports either numbers or strings in bags"),
    ("SELECT * FROM t WHERE a = <<>>", "Empty bags are not supported"),
    ("INSERT INTO t VALUE [1]", "Unsupported format in item expression. Please use struct format {...} to express "
                                "item values for insert statement. at 1:21:1"),
    ("INSERT INTO t VALUE ?", "Unsupported format in item expression. Please use struct format {...} to express "
                              "item values for insert statement. at 1:21:1"),
    ("INSERT INTO t VALUE {'a': 1, 'a': 2}", "Duplicate keys in tuple. Key: a under root at 1:30:3"),
    ("INSERT INTO t VALUE {a: 1}", "Tuple keys must be of type String. Actual type: VariableReference under root at 1:22:1"),
    ("DELETE FROM t WHERE pk = 1 RETURNING ALL NEW *",
     "Invalid returning clause: RETURNING ALL NEW *. Only RETURNING ALL OLD * is allowed in DELETE statements."),
    ("UPDATE t SET a = set_add(b, <<1>>) WHERE pk = 1", "The first argument to SET_ADD must equal the assignment value"),
    ("CREATE TABLE x", "Invalid operation. Only select, insert, update and delete operations are valid"),
])
def test_semantic_errors(text, message):
    assert error(text) == message


def test_numbers_out_of_range_are_rejected():
    assert "Number overflow" in error("SELECT * FROM t WHERE a = 1e200")


def test_parsed_statements_are_cached_by_text():
    text = "SELECT * FROM cached WHERE a = 1"
    assert parse_statement(text) is parse_statement(text)

"""Property test: random token soup and random items never crash parser or evaluator.

Any input must produce a result or a ValidationException, nothing else.
"""
import base64
import copy
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynalocal.errors import ValidationException
from dynalocal.expressions import compile_request

NAMES = ["a", "b", "c", "m", "l", "pk"]
TOKENS = [
    *NAMES, "#n", "#m", "#x", ":v", ":w", ":s", ":l", ":u", "AND", "or", "NOT", "BETWEEN", "IN", "SET", "REMOVE",
    "ADD", "DELETE", "size", "attribute_exists", "attribute_not_exists", "attribute_type", "begins_with",
    "contains", "if_not_exists", "list_append", "foo", "status", "(", ")", "[", "]", ",", ".", "=", "<>", "<",
    "<=", ">", ">=", "+", "-", "0", "1", "3", "99999999999999", "_", "$", "#", ":", "\"x\"",
]

scalars = st.one_of(
    st.builds(lambda s: {"S": s}, st.text("abxyz¿", max_size=4)),
    st.builds(lambda n: {"N": str(n)}, st.integers(-1000, 1000)),
    st.builds(lambda b: {"B": base64.b64encode(b).decode()}, st.binary(max_size=3)),
    st.builds(lambda b: {"BOOL": b}, st.booleans()),
    st.just({"NULL": True}),
    st.builds(lambda s: {"SS": sorted(s)}, st.sets(st.text("ab", max_size=2), min_size=1, max_size=3)),
    st.builds(lambda s: {"NS": [str(x) for x in sorted(s)]}, st.sets(st.integers(-5, 5), min_size=1, max_size=3)),
    st.builds(lambda s: {"BS": [base64.b64encode(x).decode() for x in sorted(s)]},
              st.sets(st.binary(min_size=1, max_size=2), min_size=1, max_size=2)),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.builds(lambda xs: {"L": xs}, st.lists(inner, max_size=3)),
        st.builds(lambda d: {"M": d}, st.dictionaries(st.sampled_from(NAMES), inner, max_size=3)),
    ),
    max_leaves=8,
)
items = st.dictionaries(st.sampled_from(NAMES), values, max_size=5)
name_maps = st.one_of(st.none(), st.dictionaries(st.sampled_from(["#n", "#m", "#x", "bad"]), st.sampled_from(NAMES),
                                                 max_size=3))
value_maps = st.one_of(st.none(), st.dictionaries(st.sampled_from([":v", ":w", ":s", ":l", "bad"]), values, max_size=4))
token_soup = st.lists(st.sampled_from(TOKENS), min_size=0, max_size=14).flatmap(
    lambda toks: st.lists(st.sampled_from(["", " "]), min_size=len(toks), max_size=len(toks)).map(
        lambda seps: "".join(t + s for t, s in zip(toks, seps))))

# A small grammar so that many generated expressions are well formed and reach evaluation.
paths = st.builds(lambda base, tail: base + tail, st.sampled_from(NAMES + ["#n"]),
                  st.sampled_from(["", ".a", "[0]", "[1].b", ".l[0]"]))
operands = st.one_of(paths, st.sampled_from([":v", ":w", ":s", ":l"]), paths.map(lambda p: f"size({p})"))
comparisons = st.one_of(
    st.builds(lambda a, op, b: f"{a} {op} {b}", operands, st.sampled_from(["=", "<>", "<", "<=", ">", ">="]), operands),
    st.builds(lambda a, b, c: f"{a} BETWEEN {b} AND {c}", operands, operands, operands),
    st.builds(lambda a, bs: f"{a} IN ({', '.join(bs)})", operands, st.lists(operands, min_size=1, max_size=3)),
    st.builds(lambda f, p, o: f"{f}({p}, {o})", st.sampled_from(["begins_with", "contains", "attribute_type"]),
              paths, operands),
    st.builds(lambda f, p: f"{f}({p})", st.sampled_from(["attribute_exists", "attribute_not_exists"]), paths),
)
conditions = st.recursive(comparisons, lambda inner: st.one_of(
    st.builds(lambda a, op, b: f"{a} {op} {b}", inner, st.sampled_from(["AND", "OR"]), inner),
    inner.map(lambda c: f"NOT {c}"),
    inner.map(lambda c: f"({c})"),
), max_leaves=5)
update_operands = st.one_of(paths, st.sampled_from([":v", ":w", ":s", ":l"]))
update_values = st.one_of(
    update_operands,
    st.builds(lambda a, op, b: f"{a} {op} {b}", update_operands, st.sampled_from(["+", "-"]), update_operands),
    st.builds(lambda p, o: f"if_not_exists({p}, {o})", paths, update_operands),
    st.builds(lambda a, b: f"list_append({a}, {b})", update_operands, update_operands),
)
actions = st.one_of(
    st.builds(lambda p, v: ("SET", p, f"{p} = {v}"), paths, update_values),
    st.builds(lambda p: ("REMOVE", p, p), paths),
    st.builds(lambda c, p, v: (c, p, f"{p} {v}"), st.sampled_from(["ADD", "DELETE"]), paths,
              st.sampled_from([":v", ":w", ":s", ":l"])),
)


def _update_text(chosen: list) -> str:
    """Join actions into clauses, one action per top-level attribute so paths never overlap."""
    seen, kept = set(), []
    for clause, path, text in chosen:
        top = path.split(".")[0].split("[")[0]
        if top not in seen:
            seen.add(top)
            kept.append((clause, text))
    return " ".join(f"{clause} " + ", ".join(t for c, t in kept if c == clause)
                    for clause in dict.fromkeys(c for c, _ in kept))


updates = st.lists(actions, min_size=1, max_size=4).map(_update_text)
key_conditions = st.builds(
    lambda hash_op, rest: f"pk {hash_op} :v" + rest, st.sampled_from(["=", "=", "<"]),
    st.sampled_from(["", " AND b = :w", " AND b < :w", " AND :w <= b", " AND b BETWEEN :w AND :s",
                     " AND begins_with(b, :s)", " AND c > :w", " AND b.x = :w"]))
full_values = st.fixed_dictionaries({":v": values, ":w": values, ":s": values, ":l": values})

KINDS = [("ConditionExpression", "PutItem"), ("FilterExpression", "Scan"), ("KeyConditionExpression", "Query"),
         ("ProjectionExpression", "GetItem"), ("UpdateExpression", "UpdateItem")]


def _parenthesized(text: str) -> str:
    """`text` in parentheses, unless it is one parenthesized group already (DynamoDB refuses
    redundant parentheses)."""
    stripped = text.strip()
    depth = 0
    for i, ch in enumerate(stripped):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and i < len(stripped) - 1:
            return f"({text})"
    return text if stripped.startswith("(") and stripped.endswith(")") else f"({text})"


def exercise(kind: int, text: str, names: dict | None, vals: dict | None, item: dict) -> None:
    param, operation = KINDS[kind]
    params = {param: text}
    if names is not None:
        params["ExpressionAttributeNames"] = dict(names)
    if vals is not None and param != "ProjectionExpression":
        params["ExpressionAttributeValues"] = copy.deepcopy(vals)
    original = copy.deepcopy(item)
    try:
        compiled = compile_request(params, operation)
        if compiled.condition or compiled.filter:
            # Conditions are two-valued (a comparison with a missing attribute is false), so
            # NOT (c) must answer the opposite of c, on the item and on a missing item.
            try:
                negated = compile_request({**params, param: "NOT " + _parenthesized(text)}, operation)
            except ValidationException as e:  # a valid condition stays valid negated
                raise AssertionError(f"NOT ({text}) refused: {e.message}") from None
            for target in (item, None) if compiled.condition else (item,):
                got = (compiled.condition or compiled.filter).matches(target)
                assert type(got) is bool
                assert (negated.condition or negated.filter).matches(target) is (not got), (text, target)
        if compiled.filter:
            compiled.filter.top_level
        if compiled.projection:
            assert isinstance(compiled.projection.apply(item), dict)
        if compiled.key_condition:
            compiled.key_condition.resolve("a", "b")
        if compiled.update:
            result = compiled.update.apply(item, frozenset({"pk"}))
            result.updated_old(item)
            result.updated_new(result.item)
            compiled.update.apply(None, frozenset({"pk"}))
    except ValidationException as e:
        assert e.message
    assert item == original, "inputs must never be mutated"


settings.register_profile("expr", max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))


@settings(settings.get_profile("expr"))
@given(st.integers(0, 4), token_soup, name_maps, value_maps, items)
def test_token_soup_never_crashes(kind, text, names, vals, item):
    exercise(kind, text, names, vals, item)


def well_formed(kind: int, text: str, target: str, vals: dict, item: dict) -> None:
    """Supply exactly the placeholders the text uses, so evaluation is usually reached."""
    names = {"#n": target} if "#n" in text else None
    used = {k: v for k, v in vals.items() if re.search(re.escape(k) + r"\b", text)}
    exercise(kind, text, names, used or None, item)


@settings(settings.get_profile("expr"))
@given(st.sampled_from([0, 1]), conditions, st.sampled_from(NAMES), full_values, items)
def test_generated_conditions_never_crash(kind, text, target, vals, item):
    well_formed(kind, text, target, vals, item)


@settings(settings.get_profile("expr"))
@given(updates, st.sampled_from(NAMES), full_values, items)
def test_generated_updates_never_crash(text, target, vals, item):
    well_formed(4, text, target, vals, item)


@settings(settings.get_profile("expr"))
@given(key_conditions, full_values, items)
def test_generated_key_conditions_never_crash(text, vals, item):
    well_formed(2, text, "a", vals, item)

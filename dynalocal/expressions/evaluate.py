"""Compile condition trees (ConditionExpression, FilterExpression, legacy maps) to closures.

A compiled condition is `fn(item, names, values) -> bool`; it is built once per distinct
expression and shared by every request, which supplies its own names and values.
Type mismatches and missing attributes make comparisons false, never errors.
"""
from __future__ import annotations

from collections.abc import Callable

from dynalocal.expressions import ast as A
from dynalocal.expressions.ast import resolve_path
from dynalocal.expressions.paths import get
from dynalocal.expressions.semantics import begins_with, contains, equal, order, size, tag_of

Getter = Callable[[dict, dict, dict], "dict | None"]
Predicate = Callable[[dict, dict, dict], bool]


def compile_path(path: A.Path) -> Getter:
    """Closure reading a path from an item, resolving #names from the request."""
    elements = path.elements
    dynamic = path.placeholders and any(isinstance(e, str) and e[:1] == "#" for e in elements)
    if len(elements) == 1:
        name = elements[0]
        if dynamic:
            return lambda item, names, values: item.get(names[name])
        return lambda item, names, values: item.get(name)
    if dynamic:
        return lambda item, names, values: get(item, resolve_path(path, names))
    return lambda item, names, values: get(item, elements)


def compile_operand(node: object) -> Getter:
    """Closure producing an operand's value (None when it does not resolve)."""
    if isinstance(node, A.Path):
        return compile_path(node)
    if isinstance(node, A.Value):
        key = node.name
        return lambda item, names, values: values[key]
    if isinstance(node, A.Const):
        av = node.av
        return lambda item, names, values: av
    # size() is the only value function allowed in conditions
    assert isinstance(node, A.Call)  # Arith is an update-only operand (checks.py)
    inner = compile_operand(node.args[0])

    def size_of(item: dict, names: dict, values: dict) -> dict | None:
        av = inner(item, names, values)
        if av is None:
            return None
        n = size(av)
        return None if n is None else {"N": str(n)}
    return size_of


_ORDER_TESTS = {
    "<": lambda o: o < 0, "<=": lambda o: o <= 0, ">": lambda o: o > 0, ">=": lambda o: o >= 0,
}


def _compile_compare(node: A.Compare) -> Predicate:
    left, right, op = compile_operand(node.left), compile_operand(node.right), node.op

    if op == "=" or op == "<>":
        negate = op == "<>"

        def eq(item: dict, names: dict, values: dict) -> bool:
            a = left(item, names, values)
            if a is None:
                return negate
            b = right(item, names, values)
            return (b is not None and equal(a, b)) != negate
        return eq

    test = _ORDER_TESTS[op]

    def ordered(item: dict, names: dict, values: dict) -> bool:
        a = left(item, names, values)
        if a is None:
            return False
        b = right(item, names, values)
        if b is None:
            return False
        o = order(a, b)
        return o is not None and test(o)
    return ordered


def _compile_between(node: A.Between) -> Predicate:
    subject, low, high = compile_operand(node.subject), compile_operand(node.low), compile_operand(node.high)

    def between(item: dict, names: dict, values: dict) -> bool:
        a = subject(item, names, values)
        lo = low(item, names, values)
        hi = high(item, names, values)
        if a is None or lo is None or hi is None:
            return False
        o1 = order(lo, a)
        if o1 is None or o1 > 0:
            return False
        o2 = order(a, hi)
        return o2 is not None and o2 <= 0
    return between


def _compile_in(node: A.In) -> Predicate:
    subject = compile_operand(node.subject)
    options = tuple(compile_operand(o) for o in node.options)

    def within(item: dict, names: dict, values: dict) -> bool:
        a = subject(item, names, values)
        if a is None:
            return False
        for option in options:
            b = option(item, names, values)
            if b is not None and equal(a, b):
                return True
        return False
    return within


def _compile_function(call: A.Call) -> Predicate:
    name = call.name
    first = compile_operand(call.args[0])
    if name == "attribute_exists":
        return lambda item, names, values: first(item, names, values) is not None
    if name == "attribute_not_exists":
        return lambda item, names, values: first(item, names, values) is None
    second = compile_operand(call.args[1])
    if name == "attribute_type":
        def has_type(item: dict, names: dict, values: dict) -> bool:
            av = first(item, names, values)
            if av is None:
                return False
            wanted = second(item, names, values)  # a :value, always present
            return wanted is not None and tag_of(av) == wanted["S"]
        return has_type
    test = begins_with if name == "begins_with" else contains

    def binary(item: dict, names: dict, values: dict) -> bool:
        a = first(item, names, values)
        if a is None:
            return False
        b = second(item, names, values)
        return b is not None and test(a, b)
    return binary


def compile_condition(tree: object) -> Predicate:
    """Closure evaluating a (checked) condition tree against an item."""
    if isinstance(tree, A.And):
        parts = tuple(compile_condition(t) for t in tree.items)

        def all_of(item: dict, names: dict, values: dict) -> bool:
            for part in parts:
                if not part(item, names, values):
                    return False
            return True
        return all_of
    if isinstance(tree, A.Or):
        parts = tuple(compile_condition(t) for t in tree.items)

        def any_of(item: dict, names: dict, values: dict) -> bool:
            for part in parts:
                if part(item, names, values):
                    return True
            return False
        return any_of
    if isinstance(tree, A.Not):
        inner = compile_condition(tree.operand)
        return lambda item, names, values: not inner(item, names, values)
    if isinstance(tree, A.Compare):
        return _compile_compare(tree)
    if isinstance(tree, A.Between):
        return _compile_between(tree)
    if isinstance(tree, A.In):
        return _compile_in(tree)
    assert isinstance(tree, A.Call)  # the one other condition node
    return _compile_function(tree)


_EMPTY: dict = {}


class Condition:
    """A condition bound to one request's names and values."""

    __slots__ = ("_fn", "_names", "_values", "_paths")

    def __init__(self, fn: Predicate, names: dict, values: dict, paths: tuple = ()) -> None:
        self._fn = fn
        self._names = names
        self._values = values
        self._paths = paths

    def matches(self, item: dict | None) -> bool:
        """Whether the item (None = no item) satisfies the condition."""
        return self._fn(item if item is not None else _EMPTY, self._names, self._values)

    @property
    def top_level(self) -> frozenset[str]:
        """Top-level attribute names the condition reads (Query checks filters against keys)."""
        return frozenset(resolve_path(p, self._names)[0] for p in self._paths)

"""Applying UpdateExpressions and legacy AttributeUpdates to an item.

All right-hand sides are evaluated against the item as it was before the update; then
SETs are written (list appends in index order), ADD and DELETE applied, and removals done
last, highest list index first, so indexes always refer to the original positions.
"""
from __future__ import annotations

from collections.abc import Callable

from dynalocal.errors import ValidationException, invalid
from dynalocal.expressions import ast as A
from dynalocal.expressions.evaluate import compile_path
from dynalocal.expressions.paths import INVALID_FOR_UPDATE, Writer, get
from dynalocal.expressions.projection import build_trie, project
from dynalocal.expressions.semantics import tag_of
from dynalocal.values import numbers

MISSING = "The provided expression refers to an attribute that does not exist in the item"
BAD_TYPE = "An operand in the update expression has an incorrect data type"
LEGACY_MISMATCH = "Type mismatch for attribute to update"

Evaluator = Callable[[dict, dict, dict], dict]


def _plain_int(text: str) -> bool:
    return text.isdigit() or (text[:1] == "-" and text[1:].isdigit())


def add_numbers(a: str, b: str) -> str:
    """Exact sum of two canonical numbers; small integers skip Decimal."""
    if _plain_int(a) and _plain_int(b):
        total = str(int(a) + int(b))
        if len(total) <= 38:
            return total
    return numbers.add(a, b)


def subtract_numbers(a: str, b: str) -> str:
    """Exact difference of two canonical numbers; small integers skip Decimal."""
    if _plain_int(a) and _plain_int(b):
        total = str(int(a) - int(b))
        if len(total) <= 38:
            return total
    return numbers.subtract(a, b)


def compile_value(node: object) -> Evaluator:
    """Closure computing a SET right-hand side; missing attributes are errors."""
    if isinstance(node, A.Path):
        getter = compile_path(node)

        def read(item: dict, names: dict, values: dict) -> dict:
            av = getter(item, names, values)
            if av is None:
                raise ValidationException(MISSING)
            return av
        return read
    if isinstance(node, A.Value):
        key = node.name
        return lambda item, names, values: values[key]
    if isinstance(node, A.Const):
        av = node.av
        return lambda item, names, values: av
    if isinstance(node, A.Arith):
        left, right = compile_value(node.left), compile_value(node.right)
        op = add_numbers if node.op == "+" else subtract_numbers

        def arith(item: dict, names: dict, values: dict) -> dict:
            a, b = left(item, names, values), right(item, names, values)
            if "N" not in a or "N" not in b:
                raise ValidationException(BAD_TYPE)
            return {"N": op(a["N"], b["N"])}
        return arith
    assert isinstance(node, A.Call)  # checks.py admits no other SET operand
    if node.name == "if_not_exists":
        getter = compile_path(node.args[0])
        default = compile_value(node.args[1])

        def if_not_exists(item: dict, names: dict, values: dict) -> dict:
            av = getter(item, names, values)
            return av if av is not None else default(item, names, values)
        return if_not_exists
    first, second = compile_value(node.args[0]), compile_value(node.args[1])

    def list_append(item: dict, names: dict, values: dict) -> dict:
        a, b = first(item, names, values), second(item, names, values)
        if "L" not in a or "L" not in b:
            raise ValidationException(BAD_TYPE)
        return {"L": a["L"] + b["L"]}
    return list_append


def _sort_key(path: tuple, descending: bool) -> tuple:
    return tuple((1, -s if descending else s) if isinstance(s, int) else (0, s) for s in path)


def _parent_ok(item: dict, path: tuple) -> bool:
    if len(path) == 1:
        return True
    parent = get(item, path[:-1])
    return parent is not None and ("M" if isinstance(path[-1], str) else "L") in parent


def _add(current: dict | None, value: dict, mismatch: str) -> dict:
    if current is None:
        return value
    tag = tag_of(value)
    if tag_of(current) != tag:
        raise ValidationException(mismatch)
    if tag == "N":
        return {"N": add_numbers(current["N"], value["N"])}
    if tag == "L":
        return {"L": current["L"] + value["L"]}
    present = set(current[tag])
    return {tag: current[tag] + [m for m in value[tag] if m not in present]}


class UpdateResult:
    """The updated item plus what ReturnValues UPDATED_OLD / UPDATED_NEW need."""

    __slots__ = ("item", "_old_paths", "_new_paths")

    def __init__(self, item: dict | None, old_paths: list[tuple], new_paths: list[tuple],
                 unchanged: list[tuple] | None = None) -> None:
        self.item = item  # None: the item was absent and the update created nothing
        if unchanged:  # nested paths SET to the value they had: DynamoDB returns them in neither (issue 25)
            old_paths = [p for p in old_paths if p not in unchanged]
            new_paths = [p for p in new_paths if p not in unchanged]
        self._old_paths = old_paths
        self._new_paths = new_paths

    def updated_old(self, old_item: dict | None) -> dict:
        """The written/removed parts of the old item, at their positions."""
        return project(old_item or {}, build_trie(self._old_paths))

    def updated_new(self, new_item: dict | None) -> dict:
        """The written parts of the new item (removed ones are absent)."""
        return project(new_item or {}, build_trie(self._new_paths))


def _no_value(item: dict, names: dict, values: dict) -> dict:
    """A REMOVE action's evaluator: never called (REMOVE has no operand)."""
    raise AssertionError("REMOVE has no value")


class UpdatePlan:
    """A compiled update, shared by all requests with the same expression text."""

    __slots__ = ("actions", "legacy", "creates")

    def __init__(self, tree: A.UpdateExpr) -> None:
        self.actions: list[tuple[str, A.Path, Evaluator]] = [
            (a.clause, a.path, compile_value(a.value) if a.value is not None else _no_value) for a in tree.actions]
        self.legacy = tree.legacy
        # An update made only of removals does not create a missing item.
        self.creates = not tree.actions or any(a.clause in ("SET", "ADD") for a in tree.actions)


class Update:
    """An update bound to one request's names and values."""

    __slots__ = ("_plan", "_names", "_values", "_paths")

    def __init__(self, plan: UpdatePlan, names: dict, values: dict) -> None:
        self._plan = plan
        self._names = names
        self._values = values
        self._paths = [A.resolve_path(path, names) for _, path, _ in plan.actions]

    def apply(self, item: dict | None, key_names: frozenset[str], key: dict | None = None) -> UpdateResult:
        """Apply to an item (None = absent, upsert).

        For an absent item the update starts from `key` (so `SET a = pk` can read it) and the
        new item contains it; without `key` the new item holds only the written attributes.
        """
        plan, names, values, paths = self._plan, self._names, self._values, self._paths
        for path in paths:
            if path[0] in key_names:
                if len(path) > 1:
                    raise ValidationException("Key attributes must be scalars; list random access '[]' and map "
                                              f"lookup '.' are not allowed: Key: {path[0]}")
                raise invalid(f"Cannot update attribute {path[0]}. This attribute is part of the key")
        if item is None and not plan.creates:
            return UpdateResult(None, [], [])
        old = item if item is not None else (key or {})
        mismatch = LEGACY_MISMATCH if plan.legacy else BAD_TYPE
        sets, others, removals = [], [], []
        for (clause, _, fn), path in zip(plan.actions, paths):
            if clause == "SET":
                sets.append((path, fn(old, names, values)))
            elif clause == "REMOVE":
                removals.append(path)
            else:
                others.append((clause, path, fn(old, names, values)))
        writer = Writer(old)
        new_paths = []
        unchanged = []  # nested paths SET to the value they already had (docs/behaviour/expressions.md)
        if len(sets) > 1:
            sets.sort(key=lambda pv: _sort_key(pv[0], False))
        for path, value in sets:
            if len(path) > 1 and item is not None and get(old, path) == value:
                unchanged.append(path)
            new_paths.append(writer.set(path, value))
        for clause, path, value in others:
            current = get(writer.root, path)
            if clause == "ADD":
                new_paths.append(writer.set(path, _add(current, value, mismatch)))
                continue
            if current is None:
                if item is not None and not _parent_ok(old, path):
                    raise ValidationException(INVALID_FOR_UPDATE)
                continue
            tag = tag_of(value)
            if tag_of(current) != tag:
                raise ValidationException(mismatch)
            drop = set(value[tag])
            remaining = [m for m in current[tag] if m not in drop]
            if remaining:
                writer.set(path, {tag: remaining})
                new_paths.append(path)
            else:
                removals.append(path)
        if len(removals) > 1:
            removals.sort(key=lambda p: _sort_key(p, True))
        for path in removals:
            if get(old, path) is None:
                if item is not None and not _parent_ok(old, path):
                    raise ValidationException(INVALID_FOR_UPDATE)
                continue
            writer.remove(path)
        return UpdateResult(writer.root, paths, new_paths, unchanged)

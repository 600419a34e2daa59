"""Semantic checks on parsed expressions, with DynamoDB's messages.

`check_*` functions validate what the text alone decides (function names, arity, misuse)
and run once per distinct expression. `bind_checks_*` return small closures that run per
request, because they depend on ExpressionAttributeNames/Values (operand types of literal
values, BETWEEN bounds, distinct operands, overlapping update paths).
"""
from __future__ import annotations

from collections.abc import Callable

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.ast import format_path, resolve_path
from dynalocal.expressions.semantics import LONG_NAMES, SETS, describe, order, tag_of

BindCheck = Callable[[dict, dict], None]

BOOLEAN_FUNCTIONS = {"attribute_exists": 1, "attribute_not_exists": 1, "attribute_type": 2,
                     "begins_with": 2, "contains": 2}
CONDITION_FUNCTIONS = {**BOOLEAN_FUNCTIONS, "size": 1}
UPDATE_FUNCTIONS = {"if_not_exists": 2, "list_append": 2}
ATTRIBUTE_TYPES = frozenset(("S", "SS", "N", "NS", "B", "BS", "BOOL", "NULL", "L", "M"))
# attribute_type is not here: DynamoDB takes any operand first (`attribute_type(:v, :t)`, `size(a)`;
# docs/behaviour/expressions.md).
_PATH_FIRST = frozenset(("attribute_exists", "attribute_not_exists", "if_not_exists"))


def _fail(param: str, detail: str) -> ValidationException:
    return ValidationException(f"Invalid {param}: {detail}")


def _check_call(call: A.Call, param: str, functions: dict, as_condition: bool) -> None:
    name = call.name
    arity = functions.get(name)
    if arity is None:
        if name in UPDATE_FUNCTIONS:  # if_not_exists / list_append outside an update's SET value
            raise _fail(param, f"The function is not allowed to be used this way in an expression; function: {name}")
        raise _fail(param, f"Invalid function name; function: {name}")
    if (name in BOOLEAN_FUNCTIONS) != as_condition:
        raise _fail(param, f"The function is not allowed to be used this way in an expression; function: {name}")
    if len(call.args) != arity:
        raise _fail(param, "Incorrect number of operands for operator or function; "
                           f"operator or function: {name}, number of operands: {len(call.args)}")
    if name in _PATH_FIRST and not isinstance(call.args[0], A.Path):
        raise _fail(param, f"Operator or function requires a document path; operator or function: {name}")
    for arg in call.args:
        _check_operand(arg, param, functions)


def _check_operand(node: object, param: str, functions: dict) -> None:
    if isinstance(node, A.Call):
        _check_call(node, param, functions, False)
    elif isinstance(node, A.Arith):
        _check_operand(node.left, param, functions)
        _check_operand(node.right, param, functions)


def check_condition(tree: object, param: str) -> None:
    """Function names, arity and placement in a condition tree."""
    if isinstance(tree, (A.And, A.Or)):
        for item in tree.items:
            check_condition(item, param)
    elif isinstance(tree, A.Not):
        check_condition(tree.operand, param)
    elif isinstance(tree, A.Call):
        _check_call(tree, param, CONDITION_FUNCTIONS, True)
    elif isinstance(tree, A.Compare):
        _check_operand(tree.left, param, CONDITION_FUNCTIONS)
        _check_operand(tree.right, param, CONDITION_FUNCTIONS)
    elif isinstance(tree, A.Between):
        for node in (tree.subject, tree.low, tree.high):
            _check_operand(node, param, CONDITION_FUNCTIONS)
    elif isinstance(tree, A.In):
        for node in (tree.subject, *tree.options):
            _check_operand(node, param, CONDITION_FUNCTIONS)


def check_update(tree: A.UpdateExpr) -> None:
    """Function names, arity and path arguments in an UpdateExpression."""
    for action in tree.actions:
        if action.value is not None:
            _check_operand(action.value, "UpdateExpression", UPDATE_FUNCTIONS)


# -- per-request checks ---------------------------------------------------------------------

def static_type(node: object, values: dict) -> str | None:
    """The type an operand is known to have before evaluation (literals and some functions)."""
    if isinstance(node, A.Value):
        return tag_of(values[node.name])
    if isinstance(node, A.Const):
        return tag_of(node.av)
    if isinstance(node, A.Call):
        return {"size": "N", "list_append": "L"}.get(node.name)
    return None


def _operand_type_error(param: str, label: str, type_name: str) -> ValidationException:
    return _fail(param, f"Incorrect operand type for operator or function; {label}, operand type: {type_name}")


def _distinct(param: str, label: str, first: object, rest: tuple) -> BindCheck | None:
    if not isinstance(first, A.Path) or not any(isinstance(r, A.Path) for r in rest):
        return None

    def check(names: dict, values: dict) -> None:
        resolved = resolve_path(first, names)
        for other in rest:
            if isinstance(other, A.Path) and resolve_path(other, names) == resolved:
                raise _fail(param, "The first operand must be distinct from the remaining operands for this "
                                   f"operator or function; operator: {label}, first operand: {format_path(resolved)}")
    return check


def _call_checks(call: A.Call, param: str, out: list) -> None:
    name, args = call.name, call.args
    for arg in args:
        if isinstance(arg, A.Call):
            _call_checks(arg, param, out)
    label = f"operator or function: {name}"

    if name == "begins_with":
        def check(names: dict, values: dict) -> None:
            for arg in args:
                t = static_type(arg, values)
                if t is not None and t not in ("S", "B"):
                    raise _operand_type_error(param, label, t)
        out.append(check)
    elif name == "size":
        def check(names: dict, values: dict) -> None:
            t = static_type(args[0], values)
            if t in ("N", "BOOL", "NULL"):
                raise _operand_type_error(param, label, t)
        out.append(check)
    elif name == "attribute_type":
        same = _distinct(param, name, args[0], args[1:])  # attribute_type(x, x): this message first
        if same:
            out.append(same)

        def check(names: dict, values: dict) -> None:
            arg = args[1]
            t = static_type(arg, values)
            if t != "S":
                raise _operand_type_error(param, label, t or "M")
            wanted = values[arg.name]["S"] if isinstance(arg, A.Value) else arg.av["S"]
            if wanted not in ATTRIBUTE_TYPES:
                raise _fail(param, f"Invalid attribute type name found; type: {wanted}, "
                                   "valid types: {B,NULL,SS,BOOL,L,BS,N,NS,S,M}")
        out.append(check)
    elif name == "list_append":
        def check(names: dict, values: dict) -> None:
            for arg in args:
                t = static_type(arg, values)
                if t is not None and t != "L":
                    raise _operand_type_error(param, label, t)
        out.append(check)
    if name in ("begins_with", "contains"):
        distinct = _distinct(param, name, args[0], args[1:])
        if distinct:
            out.append(distinct)


def _operand_checks(node: object, param: str, out: list) -> None:
    if isinstance(node, A.Call):
        _call_checks(node, param, out)
    elif isinstance(node, A.Arith):
        _operand_checks(node.left, param, out)
        _operand_checks(node.right, param, out)
        left, right, op = node.left, node.right, node.op

        def check(names: dict, values: dict) -> None:
            for arg in (left, right):
                t = static_type(arg, values)
                if t is not None and t != "N":
                    raise _operand_type_error(param, f"operator: {op}", LONG_NAMES[t])
        out.append(check)


def _between_check(node: A.Between, param: str) -> BindCheck | None:
    low, high = node.low, node.high
    if isinstance(low, A.Path) or isinstance(high, A.Path):
        return None

    def check(names: dict, values: dict) -> None:
        lo = values[low.name] if isinstance(low, A.Value) else low.av if isinstance(low, A.Const) else None
        hi = values[high.name] if isinstance(high, A.Value) else high.av if isinstance(high, A.Const) else None
        if lo is None or hi is None:
            return
        bounds = f"lower bound operand: {describe(lo)}, upper bound operand: {describe(hi)}"
        if tag_of(lo) != tag_of(hi):
            raise _fail(param, f"The BETWEEN operator requires same data type for lower and upper bounds; {bounds}")
        if (order(lo, hi) or 0) > 0:
            raise _fail(param, "The BETWEEN operator requires upper bound to be greater than or equal to "
                               f"lower bound; {bounds}")
    return check


_ORDERING = frozenset(("<", "<=", ">", ">=", "BETWEEN"))
_ORDERED_TYPES = frozenset(("S", "N", "B"))


def _orderable_check(param: str, label: str, operands: tuple) -> BindCheck:
    """An ordering comparison with an expression attribute value that cannot be ordered (list, map,
    set, BOOL, NULL) is a ValidationException; an unorderable *item* value just compares false."""
    def check(names: dict, values: dict) -> None:
        for node in operands:
            if isinstance(node, (A.Value, A.Const)):
                t = static_type(node, values)  # a str for values and constants
                if t is not None and t not in _ORDERED_TYPES:
                    raise _operand_type_error(param, f"operator: {label}", LONG_NAMES[t])
    return check


def bind_checks_condition(tree: A.Cond, param: str, out: list | None = None) -> list[BindCheck]:
    """Per-request checks for a condition tree, in textual order."""
    out = [] if out is None else out
    if isinstance(tree, (A.And, A.Or)):
        for item in tree.items:
            bind_checks_condition(item, param, out)
    elif isinstance(tree, A.Not):
        bind_checks_condition(tree.operand, param, out)
    elif isinstance(tree, A.Call):
        _call_checks(tree, param, out)
    else:
        operands: tuple[A.Operand, ...]
        if isinstance(tree, A.Compare):
            operands, label = (tree.left, tree.right), tree.op
        elif isinstance(tree, A.Between):
            operands, label = (tree.subject, tree.low, tree.high), "BETWEEN"
        else:
            operands, label = (tree.subject, *tree.options), "IN"
        for node in operands:
            _operand_checks(node, param, out)
        if label in _ORDERING:
            out.append(_orderable_check(param, label, operands))
        if isinstance(tree, A.Between):
            between = _between_check(tree, param)
            if between:
                out.append(between)
        distinct = _distinct(param, label, operands[0], operands[1:])
        if distinct:
            out.append(distinct)
    return out


def overlap_error(param: str, paths: list[tuple]) -> ValidationException | None:
    """First pair of paths where one is a prefix of the other, or that use one parent two ways."""
    for j, second in enumerate(paths):
        for first in paths[:j]:
            for a, b in zip(first, second):
                if a == b and type(a) is type(b):
                    continue
                if isinstance(a, int) != isinstance(b, int):
                    return _fail(param, "Two document paths conflict with each other; must remove or rewrite one "
                                        f"of these paths; path one: {format_path(first)}, "
                                        f"path two: {format_path(second)}")
                break
            else:
                return _fail(param, "Two document paths overlap with each other; must remove or rewrite one of "
                                    f"these paths; path one: {format_path(first)}, path two: {format_path(second)}")
    return None


def overlap_check(param: str, paths: list[A.Path]) -> BindCheck | None:
    """Reject overlapping paths now if they use no #names, else return a per-request check."""
    if len(paths) < 2:
        return None
    if not any(A.path_placeholders(p) for p in paths):
        error = overlap_error(param, [p.elements for p in paths])
        if error:
            raise error
        return None

    def overlap(names: dict, values: dict) -> None:
        error = overlap_error(param, [resolve_path(p, names) for p in paths])
        if error:
            raise error
    return overlap


def bind_checks_update(tree: A.UpdateExpr) -> list[BindCheck]:
    """Per-request checks for an UpdateExpression: overlapping targets, then operand types."""
    param = "UpdateExpression"
    overlap = overlap_check(param, [a.path for a in tree.actions])
    out: list[BindCheck] = [overlap] if overlap else []
    for action in tree.actions:
        if action.clause == "SET":
            _operand_checks(action.value, param, out)
        elif action.clause in ("ADD", "DELETE"):
            out.append(_set_operand_check(action.clause, action.value.name))
    return out


def _set_operand_check(clause: str, key: str) -> BindCheck:
    allowed = SETS | {"N"} if clause == "ADD" else SETS

    def check(names: dict, values: dict) -> None:
        t = tag_of(values[key])
        if t not in allowed:
            raise _fail("UpdateExpression", "Incorrect operand type for operator or function; "
                                            f"operator: {clause}, operand type: {LONG_NAMES[t]}, "
                                            f"typeSet: ALLOWED_FOR_{clause}_OPERAND")
    return check

"""compile_request: validate a request's expression/legacy parameters and bind them.

Parsing, semantic checks and closure compilation are cached per (kind, expression text);
a repeated request only checks its placeholders, runs the value-dependent checks and wraps
the cached closures with its own ExpressionAttributeNames/Values.

Binding is cached too (`_Plan`, per operation, expression texts, names map and value
placeholders): everything that depends only on those (parameter mix, placeholder keys,
defined/unused placeholders, names resolved into key conditions and projections) is done
once; a request with the same shape only validates its values and runs the value checks, in
the order the full path would, so it gets the same answer and the same first error.

"1 validation error detected: " prefix: current AWS prepends it for PutItem, UpdateItem and
DeleteItem to the empty ExpressionAttributeNames/Values messages; unused names/values and empty
expressions carry no prefix (docs/behaviour/validation.md §3, the parity suite run against AWS).
"""
from __future__ import annotations

from typing import cast

from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions import legacy
from dynalocal.expressions.checks import (
    bind_checks_condition,
    bind_checks_update,
    check_condition,
    check_update,
    overlap_check,
)
from dynalocal.expressions.evaluate import Condition, Predicate, compile_condition
from dynalocal.expressions.keycond import KeyCondition, key_leaves
from dynalocal.expressions.parser import parse_condition, parse_projection, parse_update
from dynalocal.expressions.projection import Projection
from dynalocal.expressions.update import Update, UpdatePlan
from dynalocal.values.attributes import validate_value
from dynalocal.values.sizedcache import SizedCache

# Per-operation facts, from the engine's operation catalogue (engine.operations calls `configure`):
# the single-item writes, whose placeholder-map messages carry PREFIX, and per operation its
# (expression parameters, legacy parameters), in DynamoDB's listing order.
PREFIXED_OPERATIONS: set[str] = set()
_PARAMS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {}
PREFIX = "1 validation error detected: "
CACHE_SIZE = 4096
# The cache is bounded in bytes too: a parsed text takes ~60 bytes per character, and texts reach 4 KB or more.
CACHE_BYTES = 32 << 20
AST_BYTES_PER_CHAR, ENTRY_BYTES = 64, 256

_ALL_EXPRESSIONS = ("UpdateExpression", "ConditionExpression", "KeyConditionExpression",
                    "FilterExpression", "ProjectionExpression")
_NO_VALUES: dict = {}
# A template's compiled form: a condition's predicate, a key condition's (path, op, value nodes)
# leaves, a projection's paths, or an update's plan.
_Payload = Predicate | list[tuple] | tuple[A.Path, ...] | UpdatePlan


def configure(params: dict[str, tuple[tuple[str, ...], tuple[str, ...]]], prefixed: frozenset[str]) -> None:
    """Set the per-operation facts (once, at start): operation -> (expression parameters, legacy
    parameters), and the operations whose placeholder-map messages carry PREFIX. An operation not
    in `params` may use every expression parameter and no legacy one."""
    _PARAMS.clear()
    _PARAMS.update(params)
    PREFIXED_OPERATIONS.clear()
    PREFIXED_OPERATIONS.update(prefixed)
    _plans.clear()


class Compiled:
    """Everything a request's expression or legacy parameters amount to (None = absent)."""

    __slots__ = ("condition", "filter", "key_condition", "projection", "update")

    def __init__(self) -> None:
        self.condition: Condition | None = None
        self.filter: Condition | None = None
        self.key_condition: KeyCondition | None = None
        self.projection: Projection | None = None
        self.update: Update | None = None


class _Template:
    """A parsed, checked and compiled expression, shared by all requests using its text."""

    __slots__ = ("names", "values", "checks", "payload", "paths")

    def __init__(self, names: list, values: list, checks: list, payload: _Payload, paths: tuple = ()) -> None:
        self.names = names
        self.values = values
        self.checks = checks
        self.payload = payload
        self.paths = paths


def _condition_template(text: str, param: str) -> _Template:
    parsed = parse_condition(text, param)
    check_condition(parsed.tree, param)
    checks = bind_checks_condition(cast(A.Cond, parsed.tree), param)  # check_condition accepted it
    return _Template(parsed.names, parsed.values, checks, compile_condition(parsed.tree),
                     tuple(A.iter_paths(parsed.tree)))


def _key_condition_template(text: str, param: str) -> _Template:
    parsed = parse_condition(text, param)
    check_condition(parsed.tree, param)
    leaves = key_leaves(parsed.tree)
    return _Template(parsed.names, parsed.values, bind_checks_condition(cast(A.Cond, parsed.tree), param), leaves)


def _projection_template(text: str, param: str) -> _Template:
    parsed = parse_projection(text)
    paths = cast("tuple[A.Path, ...]", parsed.tree)
    overlap = overlap_check(param, list(paths))
    return _Template(parsed.names, parsed.values, [overlap] if overlap else [], paths)


def _update_template(text: str, param: str) -> _Template:
    parsed = parse_update(text)
    tree = cast(A.UpdateExpr, parsed.tree)
    check_update(tree)
    return _Template(parsed.names, parsed.values, bind_checks_update(tree), UpdatePlan(tree))


_BUILDERS = {
    "UpdateExpression": _update_template,
    "ConditionExpression": _condition_template,
    "KeyConditionExpression": _key_condition_template,
    "FilterExpression": _condition_template,
    "ProjectionExpression": _projection_template,
}
_cache = SizedCache()  # text -> parsed, bounded in entries and bytes
_plans = SizedCache()  # request shape -> _Plan, bounded the same way


def template(param: str, text: str) -> _Template:
    """The cached template for an expression text (parsing it on first use)."""
    key = (param, text)
    found = _cache.get(key)
    if found is None:
        found = _BUILDERS[param](text, param)
        _cache.remember(key, found, ENTRY_BYTES + AST_BYTES_PER_CHAR * len(text), CACHE_SIZE, CACHE_BYTES)
    return found


def _bind(tpl: _Template, param: str, names: dict, values: dict) -> None:
    for name in tpl.names:
        if name not in names:
            raise ValidationException(f"Invalid {param}: An expression attribute name used in the document "
                                      f"path is not defined; attribute name: {name}")
    for value in tpl.values:
        if value not in values:
            raise ValidationException(f"Invalid {param}: An expression attribute value used in expression "
                                      f"is not defined; attribute value: {value}")
    for check in tpl.checks:
        check(names, values)


def _valid_key(key: str, sigil: str) -> bool:
    body = key[1:]
    return key[:1] == sigil and body.isascii() and (body.isalnum() or body.replace("_", "a").isalnum())


def _check_placeholder_maps(names: dict | None, values: dict | None, prefix: str) -> None:
    if names is not None:
        if not names:
            raise ValidationException(prefix + "ExpressionAttributeNames must not be empty")
        for key, name in names.items():
            if not _valid_key(key, "#"):
                raise ValidationException(f'ExpressionAttributeNames contains invalid key: Syntax error; key: "{key}"')
            if name == "":
                raise ValidationException(f"ExpressionAttributeNames contains invalid value: Empty attribute name "
                                          f"for key {key}")
    if values is not None:
        if not values:
            raise ValidationException(prefix + "ExpressionAttributeValues must not be empty")
        for key, av in values.items():
            if not _valid_key(key, ":"):
                raise ValidationException(f'ExpressionAttributeValues contains invalid key: Syntax error; key: "{key}"')
            _validate_placeholder_value(key, av)


def _validate_placeholder_value(key: str, av: object) -> None:
    try:
        validate_value(av)
    except ValidationException as e:
        raise ValidationException(
            f"ExpressionAttributeValues contains invalid value: {e.message} for key {key}") from None


def _check_parameter_mix(params: dict, operation: str) -> tuple[tuple[str, ...], bool]:
    """Legacy/expression mixing and names/values without expressions.

    Returns the expression parameters present and whether any legacy parameter is.
    """
    expressions, legacies = _PARAMS.get(operation, (_ALL_EXPRESSIONS, ()))
    if operation == "TransactWriteItems" and params.get("UpdateExpression") is not None:
        expressions = ("UpdateExpression", "ConditionExpression")
    present = tuple(p for p in _ALL_EXPRESSIONS if p in expressions and params.get(p) is not None)
    legacy_present = [p for p in legacies if params.get(p) is not None]
    if present and legacy_present:
        mixed = legacy_present
        if params.get("KeyConditionExpression") is None:
            mixed = [p for p in mixed if p != "KeyConditions"]
        if mixed:
            present = tuple(p for p in expressions if params.get(p) is not None)
            raise ValidationException(
                "Can not use both expression and non-expression parameters in the same request: "
                f"Non-expression parameters: {{{', '.join(mixed)}}} Expression parameters: {{{', '.join(present)}}}")
    if params.get("ExpressionAttributeNames") is not None and not present:
        raise ValidationException("ExpressionAttributeNames can only be specified when using expressions")
    value_expressions = [p for p in expressions if p != "ProjectionExpression"]
    if (value_expressions and params.get("ExpressionAttributeValues") is not None
            and all(params.get(p) is None for p in value_expressions)):
        verb = "are" if len(value_expressions) > 1 else "is"
        raise ValidationException("ExpressionAttributeValues can only be specified when using expressions: "
                                  f"{' and '.join(value_expressions)} {verb} null")
    return present, bool(legacy_present)


def _compile_legacy(params: dict, out: Compiled) -> None:
    operator = params.get("ConditionalOperator")
    if params.get("Expected") is not None:
        tree = legacy.expected_tree(params["Expected"], operator)
        if tree is not None:
            out.condition = Condition(compile_condition(tree), _NO_VALUES, _NO_VALUES, tuple(A.iter_paths(tree)))
    if params.get("AttributeUpdates") is not None:
        out.update = Update(UpdatePlan(legacy.attribute_updates(params["AttributeUpdates"])), _NO_VALUES, _NO_VALUES)
    if params.get("KeyConditions") is not None:
        out.key_condition = KeyCondition(legacy.key_conditions(params["KeyConditions"]), legacy=True)
    for name in ("QueryFilter", "ScanFilter"):
        if params.get(name) is not None:
            tree = legacy.filter_tree(params[name], operator)
            if tree is not None:
                out.filter = Condition(compile_condition(tree), _NO_VALUES, _NO_VALUES, tuple(A.iter_paths(tree)))
    if params.get("AttributesToGet") is not None:
        out.projection = Projection(legacy.attributes_to_get(params["AttributesToGet"]))


class _Plan:
    """A request shape's binding: all that depends on its texts, names and value placeholders, not on values."""

    __slots__ = ("checks", "update", "condition", "filter", "key_condition", "projection")

    def __init__(self) -> None:
        self.checks: list = []  # value-dependent checks, in the order the full path runs them
        self.update: UpdatePlan | None = None
        self.condition: tuple | None = None  # (predicate, paths)
        self.filter: tuple | None = None
        self.key_condition: list | None = None  # [(attribute name, op, [value placeholder])]
        self.projection: Projection | None = None  # names resolved; read-only, shared by requests

    def bind(self, names: dict, values_map: dict | None) -> Compiled:
        values = values_map or _NO_VALUES
        for key, av in values.items():
            _validate_placeholder_value(key, av)
        for check in self.checks:
            check(names, values)
        out = Compiled()
        if self.update is not None:
            out.update = Update(self.update, names, values)
        if self.condition is not None:
            out.condition = Condition(self.condition[0], names, values, self.condition[1])
        if self.filter is not None:
            out.filter = Condition(self.filter[0], names, values, self.filter[1])
        if self.key_condition is not None:
            out.key_condition = KeyCondition([(attr, op, [values[v] for v in operands])
                                              for attr, op, operands in self.key_condition])
        out.projection = self.projection
        return out


PLAN_TEXT = 2048  # requests whose expressions are longer than this are not planned (bounds the cache)


def _plan_key(params: dict, operation: str) -> tuple | None:
    """The request's shape (None: not cached, e.g. legacy parameters or long expressions)."""
    for param in _PARAMS.get(operation, (_ALL_EXPRESSIONS, ()))[1]:
        if params.get(param) is not None:
            return None
    texts = (params.get("UpdateExpression"), params.get("ConditionExpression"), params.get("KeyConditionExpression"),
             params.get("FilterExpression"), params.get("ProjectionExpression"))
    if sum(len(t) for t in texts if type(t) is str) > PLAN_TEXT:
        return None
    names, values = params.get("ExpressionAttributeNames"), params.get("ExpressionAttributeValues")
    return (operation, texts, None if names is None else tuple(names.items()),
            None if values is None else tuple(values))


def compile_request(params: dict, operation: str) -> Compiled:
    """Validate and bind a request's expressions and legacy parameters (ValidationException on error)."""
    try:
        key = _plan_key(params, operation)
    except TypeError:  # an unhashable names map (only if validation let one through): the full path
        key = None
    if key is not None:
        plan = _plans.get(key)
        if plan is not None:
            return plan.bind(params.get("ExpressionAttributeNames") or _NO_VALUES,
                             params.get("ExpressionAttributeValues"))
        plan = _Plan()
        out = _compile(params, operation, plan)
        _plans.remember(key, plan, ENTRY_BYTES * 4 + 2 * sum(len(repr(part)) for part in key[1:]), CACHE_SIZE,
                        CACHE_BYTES // 4)
        return out
    return _compile(params, operation, None)


def _compile(params: dict, operation: str, plan: _Plan | None) -> Compiled:
    """The full path; with `plan`, also records what a request of the same shape can reuse."""
    prefix = PREFIX if operation in PREFIXED_OPERATIONS else ""
    present, has_legacy = _check_parameter_mix(params, operation)
    out = Compiled()
    if has_legacy:
        if params.get("ConditionalOperator") is not None and not params.get("Expected") \
                and operation in PREFIXED_OPERATIONS:  # the single-item writes: Expected is the only map it joins
            raise ValidationException("One or more parameter values were invalid: ConditionalOperator cannot be "
                                      "used without Expected")
        _compile_legacy(params, out)
    names_map = params.get("ExpressionAttributeNames")
    values_map = params.get("ExpressionAttributeValues")
    _check_placeholder_maps(names_map, values_map, prefix)
    names = names_map or _NO_VALUES
    values = values_map or _NO_VALUES
    used_names: set[str] = set()
    used_values: set[str] = set()
    for param in present:
        text = params[param]
        if text == "":
            raise ValidationException(f"Invalid {param}: The expression can not be empty;")
        tpl = template(param, text)  # its payload is what _BUILDERS[param] makes (the casts below)
        _bind(tpl, param, names, values)
        used_names.update(tpl.names)
        used_values.update(tpl.values)
        if param == "UpdateExpression":
            out.update = Update(cast("UpdatePlan", tpl.payload), names, values)
        elif param == "ConditionExpression":
            out.condition = Condition(cast("Predicate", tpl.payload), names, values, tpl.paths)
        elif param == "FilterExpression":
            out.filter = Condition(cast("Predicate", tpl.payload), names, values, tpl.paths)
        elif param == "KeyConditionExpression":
            resolved = [(A.resolve_path(path, names)[0], op, [v.name for v in operands])
                        for path, op, operands in cast("list[tuple]", tpl.payload)]
            out.key_condition = KeyCondition([(attr, op, [values[v] for v in operands])
                                              for attr, op, operands in resolved])
            if plan is not None:
                plan.key_condition = resolved
        else:
            out.projection = Projection([A.resolve_path(p, names) for p in cast("tuple[A.Path, ...]", tpl.payload)])
        if plan is not None:
            plan.checks += tpl.checks
            if param == "UpdateExpression":
                plan.update = cast("UpdatePlan", tpl.payload)
            elif param == "ConditionExpression":
                plan.condition = (tpl.payload, tpl.paths)
            elif param == "FilterExpression":
                plan.filter = (tpl.payload, tpl.paths)
            elif param == "ProjectionExpression":
                plan.projection = out.projection
    check_unused(names, values, used_names, used_values)
    return out


def check_unused(names: dict, values: dict, used_names: set[str], used_values: set[str]) -> None:
    """DynamoDB refuses expression attribute names or values that no expression of the request uses."""
    unused = [k for k in names if k not in used_names]
    if unused:
        raise ValidationException(
            f"Value provided in ExpressionAttributeNames unused in expressions: keys: {{{', '.join(unused)}}}")
    unused = [k for k in values if k not in used_values]
    if unused:
        raise ValidationException(
            f"Value provided in ExpressionAttributeValues unused in expressions: keys: {{{', '.join(unused)}}}")

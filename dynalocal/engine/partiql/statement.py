"""ExecuteStatement: a PartiQL statement run as the equivalent GetItem, Query, Scan, PutItem,
UpdateItem or DeleteItem, through those operations' own handlers.

Going through the handlers keeps capacity, throttling, paging (Limit, the 1 MB page), ordering,
conditions and the write path exactly the equivalent operation's. Only what PartiQL adds is
done here: the residual filter and the projection of SELECT (on the items the operation
returned, by the expression evaluator), NextToken, and PartiQL's own errors.
"""
from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any, Literal, cast

import orjson

from dynalocal.engine import items, query
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import data_table
from dynalocal.engine.context import Context
from dynalocal.engine.partiql.plan import (
    Narrow,
    ReadPlan,
    WritePlan,
    WriteTree,
    check_values,
    key_type_error,
    plain,
    plan,
)
from dynalocal.errors import ConditionalCheckFailedException, DuplicateItemException, ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions.evaluate import Predicate
from dynalocal.expressions.partiql.ast import Exists, Select, Statement
from dynalocal.expressions.partiql.parser import parse_statement
from dynalocal.expressions.paths import get
from dynalocal.expressions.semantics import order
from dynalocal.storage.mutation import PARTIQL, current_origin
from dynalocal.values.attributes import validate_value

PARAMETER_COUNT = "Number of parameters in request and statement don't match."
INVALID_TOKEN = "Invalid NextToken"
DUPLICATE = "Duplicate primary key exists in table"
EXISTS_OUTSIDE = "EXISTS can only be used in ExecuteTransaction write requests."


def bind(text: str, params: list | None) -> tuple[Statement, dict]:
    """Parse a statement and bind its parameters: (statement, slot values)."""
    statement = parse_statement(text)
    params = params or []
    if len(params) != statement.params:
        raise ValidationException(PARAMETER_COUNT)
    for av in params:
        validate_value(av)
    return statement, statement.values(params)


def table_of(statement: Statement) -> str:
    tree = cast("Select | WriteTree", statement.tree)  # what parse_statement builds
    return (tree.select if isinstance(tree, Exists) else tree).table


def prepare(ctx: Context, caller: Caller, text: str, params: list | None) -> tuple[ReadPlan | WritePlan, dict, str]:
    """Parse, bind and plan a statement against its table: (plan, slot values, table name)."""
    statement, values = bind(text, params)
    name = table_of(statement)
    return plan(statement, data_table(ctx, caller, name)), values, name


def decode(out: dict | bytes) -> dict:
    return orjson.loads(out) if isinstance(out, bytes) else out


def typed(av: dict, kind: str | None, name: str) -> dict:
    """A key value, which must have the key attribute's type."""
    if len(av) != 1 or kind not in av:
        raise key_type_error(name)
    return av


def merge_capacity(total: dict | None, cc: dict | None) -> dict | None:
    """Sum two ConsumedCapacity members of one table (total and per-table/index breakdown)."""
    if total is None or cc is None:
        return total or cc
    out = dict(total)
    out["CapacityUnits"] = total["CapacityUnits"] + cc["CapacityUnits"]
    if "Table" in cc:
        out["Table"] = {"CapacityUnits": out.get("Table", {}).get("CapacityUnits", 0.0) + cc["Table"]["CapacityUnits"]}
    for group in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
        for index, units in cc.get(group, {}).items():
            into = out.setdefault(group, {})
            into[index] = {"CapacityUnits": into.get(index, {}).get("CapacityUnits", 0.0) + units["CapacityUnits"]}
    return out


def project(plan_: ReadPlan, item: dict) -> dict:
    """SELECT's projection: each path's value under its last name (`a.b[1]` -> `b[1]`)."""
    if plan_.projection is None:
        return item
    out = {}
    for path, alias in zip(plan_.projection, plan_.aliases):
        av = get(item, path.elements)
        if av is not None:
            out[alias] = av
    return out


def keep(plan_: ReadPlan, item: dict, values: dict, flt: Predicate | None | Literal[False] = False) -> bool:
    """Whether an item passes the plan's residual filter (or `flt`, a variant's filter, when given)."""
    flt = plan_.filter if flt is False else flt
    return flt is None or flt(item, {}, values)


def partition_keys(plan_: ReadPlan, values: dict) -> list[dict]:
    """The distinct partition-key values of a GetItem/Query plan, in statement order, type-checked."""
    schema = plan_.schema
    if plan_.multi_slots:  # a multi-attribute GSI key: one Query, its HASH values as :k0, :k1, ...
        return [{f":k{i}": typed(values[slot], kind, name) for i, (slot, name, kind) in enumerate(plan_.multi_slots)}]
    if len(plan_.hash_values) == 1:
        return [typed(values[plan_.hash_values[0].name], schema.hash_type, schema.hash_name)]
    found: dict[bytes, dict] = {}
    for slot in plan_.hash_values:
        av = typed(values[slot.name], schema.hash_type, schema.hash_name)
        found.setdefault(orjson.dumps(av), av)
    return list(found.values())


def full_key(plan_: ReadPlan, values: dict, hash_value: dict) -> dict:
    """The primary key of a GetItem plan for one partition-key value."""
    schema = plan_.schema
    key = {schema.hash_name: hash_value}
    if schema.range_name is not None:
        sort = cast("A.Compare", plan_.range)  # a GetItem's is `range key = value slot`
        key[schema.range_name] = typed(values[cast("A.Value", sort.right).name], schema.range_type, schema.range_name)
    return key


def _token(index: int, key: dict) -> str:
    return base64.b64encode(orjson.dumps({"v": 1, "i": index, "k": key})).decode()


def _untoken(token: str, operations: int) -> tuple[int, dict | None]:
    try:
        data = orjson.loads(base64.b64decode(token, validate=True))
        index, key = data["i"], data["k"]
        if data.get("v") != 1 or type(index) is not int or not 0 <= index < operations or \
                (key is not None and type(key) is not dict):
            raise ValueError
        return index, key
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError):
        raise ValidationException(INVALID_TOKEN) from None


def run_read(ctx: Context, caller: Caller, body: dict, plan_: ReadPlan, values: dict, table: str) -> dict | bytes:
    """A SELECT: GetItems, Queries (one per partition-key value) or a Scan, filtered and projected."""
    check_values(plan_.checks, values)
    base: dict[str, Any] = {"TableName": table}
    if body.get("ConsistentRead") is True:
        base["ConsistentRead"] = True
    if body.get("ReturnConsumedCapacity") is not None:
        base["ReturnConsumedCapacity"] = body["ReturnConsumedCapacity"]
    if plan_.operation == "GetItem":
        return _run_gets(ctx, caller, plan_, values, base)
    if plan_.index is not None:
        base["IndexName"] = plan_.index
    return _run_pages(ctx, caller, plan_, values, base, body.get("NextToken"), body.get("Limit"))


def _run_gets(ctx: Context, caller: Caller, plan_: ReadPlan, values: dict, base: dict) -> dict | bytes:
    """A SELECT of whole keys: one GetItem per partition-key value."""
    keys = partition_keys(plan_, values)
    if len(keys) == 1 and plan_.filter is None and plan_.projection is None and "ReturnConsumedCapacity" not in base:
        # The stored item's bytes go out as they are: {"Item":<item>} becomes {"Items":[<item>]}.
        raw = items.get_item(ctx, caller, {**base, "Key": full_key(plan_, values, keys[0])})
        if type(raw) is bytes and (raw == b"{}" or raw.startswith(b'{"Item":')):
            return b'{"Items":[' + raw[8:-1] + b"]}" if raw != b"{}" else b'{"Items":[]}'
        item = decode(raw).get("Item")
        return _answer([item] if item is not None else [], None, None, None)
    found: list[dict] = []
    cc = None
    for hash_value in keys:
        out = decode(items.get_item(ctx, caller, {**base, "Key": full_key(plan_, values, hash_value)}))
        cc = merge_capacity(cc, out.get("ConsumedCapacity"))
        item = out.get("Item")
        if item is not None and keep(plan_, item, values):
            found.append(project(plan_, item))
    return _answer(found, cc, None, None)


def _query_variant(plan_: ReadPlan, values: dict) -> tuple[ReadPlan | Narrow, dict]:
    """The key condition a Query runs with (the plan's, or its narrower variant when the bounds it
    needs are in order) and the sort-key values it binds."""
    schema = plan_.schema
    ranges = {name: typed(values[name], schema.range_type, schema.range_name)  # type: ignore[arg-type]
              for name in plan_.range_values}
    narrow = plan_.narrow
    if narrow is not None:
        bounds = [typed(values[name], schema.range_type, schema.range_name)  # type: ignore[arg-type]
                  for name in narrow.range_values]
        if order(bounds[0], bounds[1]) <= 0:  # type: ignore[operator]
            return narrow, dict(zip(narrow.range_values, bounds))
    return plan_, ranges


def _run_pages(ctx: Context, caller: Caller, plan_: ReadPlan, values: dict, base: dict, token: str | None,
               limit: int | None) -> dict | bytes:
    """Queries (one per partition-key value, from the NextToken's) or a Scan, until a page stops early."""
    hashes = partition_keys(plan_, values)
    operations = max(1, len(hashes))
    start, esk = _untoken(token, operations) if token is not None else (0, None)
    variant: ReadPlan | Narrow = plan_
    ranges: dict = {}
    if plan_.operation == "Query":
        variant, ranges = _query_variant(plan_, values)
        base["KeyConditionExpression"] = variant.key_condition
        base["ExpressionAttributeNames"] = variant.names
        base["ScanIndexForward"] = not plan_.descending
    found: list[dict] = []
    cc = last = None
    whole = operations == 1 and variant.filter is None and plan_.projection is None
    for i in range(start, operations):
        request = dict(base)
        if esk is not None:
            request["ExclusiveStartKey"] = esk
        if limit is not None:
            request["Limit"] = limit
        if plan_.operation == "Query":
            request["ExpressionAttributeValues"] = ({**hashes[i], **ranges} if plan_.multi_slots
                                                    else {":h": hashes[i], **ranges})
            raw = query.query(ctx, caller, request)
        else:
            raw = query.scan(ctx, caller, request)
        if whole and type(raw) is bytes:
            cut = raw.rfind(b'],"Count":')
            if cut > 0:
                return _pass_through(raw, cut)
        out = decode(raw)
        cc = merge_capacity(cc, out.get("ConsumedCapacity"))
        for item in out["Items"]:
            if keep(plan_, item, values, variant.filter):
                found.append(project(plan_, item))
        esk = out.get("LastEvaluatedKey")
        if limit is not None:
            limit -= out["ScannedCount"]
        if esk is not None:
            last = (i, esk)
            break
        if limit is not None and limit <= 0:
            if i + 1 < operations:
                last = (i + 1, None)
            break
    if last is None:
        return _answer(found, cc, None, None)
    return _answer(found, cc, _token(*last), last[1])


def _pass_through(raw: bytes, cut: int) -> bytes:
    """The response of a single Query/Scan whose items need no filter or projection: its item
    bytes as they are (they are never decoded), then NextToken and capacity from its small tail.

    `],"Count":` can only end the Items list: inside an item a list value is always followed by
    the `}` of its AttributeValue, and quotes inside strings are escaped.
    """
    tail = orjson.loads(b"{" + raw[cut + 2:])
    parts = [raw[:cut + 1]]
    esk = tail.get("LastEvaluatedKey")
    if esk is not None:
        parts += [b',"NextToken":"', _token(0, esk).encode(), b'","LastEvaluatedKey":', orjson.dumps(esk)]
    if tail.get("ConsumedCapacity") is not None:
        parts += [b',"ConsumedCapacity":', orjson.dumps(tail["ConsumedCapacity"])]
    parts.append(b"}")
    return b"".join(parts)


def _answer(found: list, cc: dict | None, token: str | None, last_key: dict | None) -> dict:
    out: dict[str, Any] = {"Items": found}
    if token is not None:
        out["NextToken"] = token
        if last_key is not None:
            out["LastEvaluatedKey"] = last_key
    if cc is not None:
        out["ConsumedCapacity"] = cc
    return out


def write_request(plan_: WritePlan, values: dict, table: str) -> tuple[str, dict]:
    """The equivalent single-item request of a write: (PutItem|UpdateItem|DeleteItem|ConditionCheck, body)."""
    schema = plan_.schema
    request: dict[str, Any] = {"TableName": table}
    if plan_.kind == "Insert":
        av = values[plan_.item.name]
        if "M" not in av:
            raise ValidationException("Unsupported format in item expression. Please use struct format {...} to "
                                      "express item values for insert statement.")
        item = av["M"]
        for name in schema.names:
            if name not in item:
                raise ValidationException(f"Key attribute should be present in the item: Key {name}")
            typed(item[name], schema.hash_type if name == schema.hash_name else schema.range_type, name)
        request["Item"] = item
    else:
        request["Key"] = {name: typed(values[slot.name], schema.hash_type if name == schema.hash_name
                                      else schema.range_type, name) for name, slot in plan_.key.items()}
    for arith in plan_.arith:
        for operand in (arith.left, arith.right):
            if isinstance(operand, A.Value) and "N" not in values[operand.name]:
                tag = next(iter(values[operand.name]))
                raise ValidationException("Incorrect operand type for operator or function; operator or function: "
                                          f"{arith.op}, operand type: {tag}")
    if plan_.update is not None:
        request["UpdateExpression"] = plan_.update
    if plan_.condition is not None:
        request["ConditionExpression"] = plan_.condition
    if plan_.names:
        request["ExpressionAttributeNames"] = plan_.names
    if plan_.values:
        request["ExpressionAttributeValues"] = {name: values[name] for name in plan_.values}
    operation = {"Insert": "PutItem", "Update": "UpdateItem", "Delete": "DeleteItem"}.get(plan_.kind, "ConditionCheck")
    return operation, request


WRITERS = {"PutItem": items.put_item, "UpdateItem": items.update_item, "DeleteItem": items.delete_item}


def call_write(ctx: Context, caller: Caller, operation: str, request: dict) -> dict:
    """Run a single-item write; an INSERT's failed key guard is DuplicateItemException."""
    try:
        return decode(WRITERS[operation](ctx, caller, request))
    except ConditionalCheckFailedException:
        if operation == "PutItem":
            raise DuplicateItemException(DUPLICATE) from None
        raise
    except ValidationException as err:
        raise plain(err) from None


def run_write(ctx: Context, caller: Caller, body: dict, plan_: WritePlan, values: dict, table: str) -> dict:
    """INSERT / UPDATE / DELETE as PutItem / UpdateItem / DeleteItem."""
    operation, request = write_request(plan_, values, table)
    if operation == "ConditionCheck":
        raise ValidationException(EXISTS_OUTSIDE)
    for member in ("ReturnConsumedCapacity", "ReturnValuesOnConditionCheckFailure"):
        if body.get(member) is not None:
            request[member] = body[member]
    if plan_.returning is not None:
        request["ReturnValues"] = plan_.returning
    out = call_write(ctx, caller, operation, request)
    found = [out["Attributes"]] if out.get("Attributes") else []
    return _answer(found, out.get("ConsumedCapacity"), None, None)


def partiql_origin(handler: Callable[[Context, Caller, dict], Any]) -> Callable[[Context, Caller, dict], Any]:
    """Run a handler with the writes it makes marked as PartiQL's (Mutation.origin)."""
    def run(ctx: Context, caller: Caller, body: dict) -> Any:
        token = current_origin.set(PARTIQL)
        try:
            return handler(ctx, caller, body)
        finally:
            current_origin.reset(token)
    run.__name__ = run.__qualname__ = handler.__name__
    return run


@partiql_origin
def execute_statement(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    plan_, values, table = prepare(ctx, caller, body["Statement"], body.get("Parameters"))
    if isinstance(plan_, ReadPlan):
        return run_read(ctx, caller, body, plan_, values, table)
    return run_write(ctx, caller, body, plan_, values, table)

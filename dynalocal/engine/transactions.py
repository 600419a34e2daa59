"""TransactWriteItems and TransactGetItems: all or nothing, isolated, idempotent by token.

A transaction is planned completely (validation, key checks, conditions, admission) before
any action is applied; handlers run one at a time on the event loop, so the apply phase is
atomic and no other request can observe or interleave with it. Writes use the one write
sequence (engine.writes): prepare, check and admit_indexes for every action, then apply.
"""
from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass
from typing import Any

import orjson

from dynalocal.capacity.charge import Charge, GsiWrite, consumed_list, partition_key
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import compile_expressions, data_table
from dynalocal.engine.context import Context
from dynalocal.engine.writes import admit_indexes, apply, check, prepare
from dynalocal.errors import (
    ConditionalCheckFailedException,
    DynamoError,
    IdempotentParameterMismatchException,
    TransactionCanceledException,
    ValidationException,
    transaction_canceled,
)
from dynalocal.expressions import compile_request
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import check_index_keys
from dynalocal.values.attributes import MAX_ITEM_SIZE, item_size, validate_item
from dynalocal.values.blob import dumps

ACTIONS = ("ConditionCheck", "Put", "Update", "Delete")
TOKEN_LIFETIME = 600.0
MAX_REQUEST_BYTES = 4 * 1024 * 1024
ITEM_TOO_BIG = "Item size has exceeded the maximum allowed size"
UPDATE_TOO_BIG = "Item size to update has exceeded the maximum allowed size"


class Cancelled(Exception):
    """One action's cancellation reason (code and message)."""

    def __init__(self, code: str, message: str | None = None, item: dict | None = None) -> None:
        super().__init__(code)
        self.code, self.message, self.item = code, message, item


@dataclass
class Action:
    """One planned write: where it goes and what it leaves there."""

    kind: str
    spec: dict
    entry: TableEntry
    key: bytes = b""
    prefix: bytes = b""  # the key's partition key prefix (per-key capacity counts)
    part: int = 0
    old: tuple | None = None
    new: tuple | None = None  # record to store; None with kind Delete means delete
    compiled: Any = None
    spec_size: int = 0  # validated size of a Put's item
    gsis: list[GsiWrite] | tuple = ()  # GSI entries the write touches
    charge: Charge | None = None  # capacity of this action's table in this request
    old_item: dict | None = None  # decoded old / new item, handed on to Table.apply's listeners
    new_item: dict | None = None


def _one_action(element: dict) -> tuple[str, dict]:
    present = [k for k in ACTIONS if element.get(k) is not None]
    if len(present) != 1:
        raise ValidationException("TransactItems can only contain one of Check, Put, Update or Delete")
    return present[0], element[present[0]]


def _plan_write(ctx: Context, action: Action) -> None:
    """Key checks (and the GSI key attributes of a Put); raises Cancelled for this action."""
    spec, table = action.spec, action.entry.table
    try:
        if action.kind == "Put":
            action.key, action.prefix = table.schema.check_item_parts(spec["Item"])
            if table.indexes or table.vectors:
                check_index_keys(table, spec["Item"])
        else:
            action.key, action.prefix = table.schema.check_key_parts(
                spec["Key"], "One or more parameter values are not valid. ")
    except ValidationException as err:
        raise Cancelled("ValidationError", err.message) from None


def _evaluate(action: Action) -> tuple[dict | None, dict | None]:
    """Check the condition and build the new record; return the old and new items (the old one
    None when nothing needs it decoded: a Put without condition on a table without indexes)."""
    condition = action.compiled.condition if action.compiled is not None else None
    kind, table = action.kind, action.entry.table
    old_item = None
    if action.old is not None and (condition is not None or kind != "Put" or table.indexes):
        old_item = orjson.loads(action.old[0])
    if condition is not None:
        try:  # a cancelled transaction is charged nothing: no Charge for the failed condition
            check(None, action.part, action.prefix, action.compiled, action.spec, action.old, old_item, 0)
        except ConditionalCheckFailedException as err:
            raise Cancelled("ConditionalCheckFailed", err.message, err.extra.get("Item")) from None
    new_item = None
    try:
        if kind == "Put":
            new_item = action.spec["Item"]
            action.new = (dumps(new_item), action.spec_size)
        elif kind == "Update":
            update = action.compiled.update if action.compiled is not None else None
            if update is None:
                new_item = dict(old_item) if old_item is not None else dict(action.spec["Key"])
            else:
                new_item = update.apply(old_item, table.schema.name_set, key=action.spec["Key"]).item
            if new_item is not None:
                new_item.update(action.spec["Key"])
                size = item_size(new_item)
                if size > MAX_ITEM_SIZE:
                    raise ValidationException(UPDATE_TOO_BIG)
                if table.indexes or table.vectors:
                    check_index_keys(table, new_item, update=update is not None)
                action.new = (dumps(new_item), size)
    except ValidationException as err:
        raise Cancelled("ValidationError", err.message) from None
    action.old_item, action.new_item = old_item, new_item
    return old_item, new_item


def _throttle_reason(action: Action, err: DynamoError | None) -> None:
    """Cancel the action with the throttling code for its table's billing mode."""
    if err is not None:
        code = "ProvisionedThroughputExceeded" if action.entry.billing_mode == "PROVISIONED" else "ThrottlingError"
        raise Cancelled(code, err.message)


def _charges(ctx: Context, actions: list[Action]) -> dict[str, Charge]:
    """One Charge per table named in the request (ConsumedCapacity lists tables as named)."""
    charges: dict[str, Charge] = {}
    for action in actions:
        name = action.spec["TableName"]
        charge = charges.get(name)
        if charge is None:
            charge = charges[name] = ctx.capacity.charge(action.entry)
            charge.table_used = True
        action.charge = charge
    return charges


def _prepare(action: Action) -> None:
    """Admit the action's write on its partition and read its current item (writes.prepare)."""
    try:
        action.part, action.old = prepare(action.charge, action.entry.table, action.key)  # type: ignore[arg-type]
    except DynamoError as err:  # a throttle
        _throttle_reason(action, err)


def _admit_indexes(action: Action, old_item: dict | None, new_item: dict | None) -> None:
    """GSI back-pressure: cancel a write that a GSI partition cannot absorb."""
    if not action.entry.table.indexes or (action.new is None and (action.kind != "Delete" or action.old is None)):
        return
    try:
        action.gsis = admit_indexes(action.charge, action.entry.table, action.part,  # type: ignore[arg-type]
                                    action.key, action.old, new_item, old_item)
    except DynamoError as err:  # a throttle
        _throttle_reason(action, err)


def _cancel(reasons: list[Cancelled | None]) -> TransactionCanceledException:
    out = []
    for reason in reasons:
        if reason is None:
            out.append({"Code": "None"})
            continue
        entry: dict[str, Any] = {"Code": reason.code}
        if reason.message is not None:
            entry["Message"] = reason.message
        if reason.item is not None:
            entry["Item"] = reason.item
        out.append(entry)
    return transaction_canceled(out)


def _idempotency(body: dict) -> tuple[str | None, bytes]:
    token = body.get("ClientRequestToken")
    if token is None:
        return None, b""  # no token, no fingerprint to compare
    canonical = orjson.dumps({k: v for k, v in body.items() if k != "ReturnConsumedCapacity"},
                             option=orjson.OPT_SORT_KEYS)
    fingerprint = hashlib.sha256(canonical).digest()
    return token, fingerprint


def transact_write_items(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    items = body["TransactItems"]
    token, fingerprint = _idempotency(body)
    if token is not None:
        seen = _earlier_answer(ctx, token, fingerprint)
        if seen is not None:
            return seen
    if len(orjson.dumps(items)) > MAX_REQUEST_BYTES:
        raise ValidationException("Transaction size exceeds the maximum allowed size of 4 MB")
    actions = _validated_actions(ctx, caller, items)
    # 2. Keys, then duplicates; 3. admission, conditions and new images for every action.
    # Only the first action with an invalid key or item is reported; the others show None.
    for i, action in enumerate(actions):
        try:
            if action.kind == "Put" and action.spec_size > MAX_ITEM_SIZE:
                raise Cancelled("ValidationError", ITEM_TOO_BIG)
            _plan_write(ctx, action)
        except Cancelled as reason:
            raise _cancel([reason if j == i else None for j in range(len(actions))]) from None
    reasons: list[Cancelled | None] = [None] * len(actions)
    charges = _charges(ctx, actions)
    seen_keys = set()
    for action in actions:
        ident = (action.entry.name, action.key)
        if ident in seen_keys:
            raise ValidationException("Transaction request cannot include multiple operations on one item")
        seen_keys.add(ident)
    for i, action in enumerate(actions):
        try:
            _prepare(action)
            _admit_indexes(action, *_evaluate(action))
        except Cancelled as reason:
            reasons[i] = reason
    if any(reasons):
        raise _cancel(reasons)
    # 4. Apply: nothing below can fail. Each action is charged 2 x W(max(old, new)), ConditionCheck too.
    for action in actions:
        apply(action.charge, action.entry.table, action.part, action.key, action.prefix,  # type: ignore[arg-type]
              action.old, action.new, action.new_item, action.old_item, action.gsis,
              action.kind == "Delete", transactional=True)
    out: dict[str, Any] = {}
    cc = consumed_list(body, charges, "WriteCapacityUnits")
    if cc:
        out["ConsumedCapacity"] = cc
    result = out or b"{}"
    if token is not None:
        ctx.tokens[token] = (fingerprint, result, time.monotonic())
    return result


def _earlier_answer(ctx: Context, token: str, fingerprint: bytes) -> dict | bytes | None:
    """The answer of an earlier request with this client token (tokens expire after TOKEN_LIFETIME);
    IdempotentParameterMismatchException when that request was not the same one."""
    now = time.monotonic()
    for old_token in [t for t, (_, _, at) in ctx.tokens.items() if now - at > TOKEN_LIFETIME]:
        del ctx.tokens[old_token]
    seen = ctx.tokens.get(token)
    if seen is None:
        return None
    if seen[0] != fingerprint:
        raise IdempotentParameterMismatchException(
            "The request uses the same client token as a previous, but non-identical request. "
            "Do not reuse a client token with different requests, unless the requests are identical.")
    return seen[1]


def _validated_actions(ctx: Context, caller: Caller, items: list) -> list[Action]:
    """1. Request-level validation: shapes, values, expressions (ValidationException, nothing cancelled)."""
    actions: list[Action] = []
    for element in items:
        kind, spec = _one_action(element)
        size = 0
        if kind == "Put":
            size = validate_item(spec["Item"])
        else:
            validate_item(spec["Key"])
        compiled = compile_expressions(spec, "TransactWriteItems")
        if kind == "Update" and (compiled is None or compiled.update is None) and "UpdateExpression" not in spec:
            raise ValidationException("UpdateExpression must be specified for an Update action")
        if kind == "ConditionCheck" and (compiled is None or compiled.condition is None):
            raise ValidationException("ConditionExpression must be specified for a ConditionCheck action")
        actions.append(Action(kind, spec, data_table(ctx, caller, spec["TableName"]), compiled=compiled,
                              spec_size=size))
    return actions


def transact_get_items(ctx: Context, caller: Caller, body: dict) -> dict:
    planned = []
    for element in body["TransactItems"]:
        spec = element["Get"]
        validate_item(spec["Key"])
        compiled = compile_request(spec, "TransactGetItems")
        action = Action("Get", spec, data_table(ctx, caller, spec["TableName"]), compiled=compiled)
        planned.append(action)
    reasons: list[Cancelled | None] = [None] * len(planned)
    charges = _charges(ctx, planned)
    seen_keys = set()
    for i, action in enumerate(planned):
        try:
            action.key = action.entry.table.schema.check_key(action.spec["Key"])
        except ValidationException as err:
            reasons[i] = Cancelled("ValidationError", err.message)
            continue
        ident = (action.entry.name, action.key)
        if ident in seen_keys:  # request-level, before any admission (docs/behaviour/validation.md §5)
            raise ValidationException("Transaction request cannot include multiple operations on one item")
        seen_keys.add(ident)
    for i, action in enumerate(planned):
        if reasons[i] is not None:
            continue
        try:
            action.part = action.entry.table.partition_index(action.key)
            _throttle_reason(action, action.charge.refuse(0, action.part))  # type: ignore[union-attr]
        except Cancelled as reason:
            reasons[i] = reason
    if any(reasons):
        raise _cancel(reasons)
    responses: list[dict] = []
    for action in planned:
        record = action.entry.table.partitions[action.part].get(action.key)
        action.charge.transact_get(action.part, record[1] if record else 0,  # type: ignore[union-attr]
                                   partition_key(action.key))
        if record is None:
            responses.append({})
            continue
        item = orjson.loads(record[0])
        projection = action.compiled.projection if action.compiled is not None else None
        responses.append({"Item": projection.apply(item) if projection is not None else item})
    out: dict[str, Any] = {"Responses": responses}
    cc = consumed_list(body, charges, "ReadCapacityUnits")
    if cc:
        out["ConsumedCapacity"] = cc
    return out

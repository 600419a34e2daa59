"""BatchExecuteStatement and ExecuteTransaction: PartiQL statements as single-item operations
(batches) or as one TransactGetItems / TransactWriteItems (transactions), via their handlers.

A batch is all reads (each a GetItem of a full key) or all writes; every statement gets its own
response or `Error {Code, Message}` and the call answers 200. A transaction is all reads or all
writes (with EXISTS(...) as condition checks) and is cancelled as a whole, with the reasons of
TransactWriteItems in statement order.
"""
from __future__ import annotations

from typing import Any, cast

import orjson

from dynalocal.engine.caller import Caller
from dynalocal.engine.common import data_table
from dynalocal.engine.context import Context
from dynalocal.engine.items import get_item
from dynalocal.engine.partiql.plan import ReadPlan, WritePlan, check_values, plain, plan
from dynalocal.engine.partiql.statement import (
    DUPLICATE,
    EXISTS_OUTSIDE,
    bind,
    call_write,
    decode,
    full_key,
    keep,
    merge_capacity,
    partiql_origin,
    partition_keys,
    project,
    table_of,
    write_request,
)
from dynalocal.engine.transactions import transact_get_items, transact_write_items
from dynalocal.errors import DynamoError, TransactionCanceledException, ValidationException, transaction_canceled

MIXED_BATCH = "Read and write requests together in the same batch is not supported."
MIXED_TRANSACTION = "ExecuteTransaction API does not support both read and write operations in the same request."
SINGLE_ITEM = "Only single item select is supported"
DUPLICATES = "Provided list of item keys contains duplicates"
TX_SELECT = "Select statements within ExecuteTransaction must specify the primary key in the where clause."
TX_RETURNING = "RETURNING clause is not supported in ExecuteTransaction."
TX_EXISTS = "EXISTS() must contain a single item read with additional condition"
TX_SAME_ITEM = "Transaction request cannot include multiple operations on one item"
TX_UNSUPPORTED = "Unsupported operation in transaction."
CODES = {"ValidationException": "ValidationError", "ThrottlingException": "ThrottlingError",
         "RequestLimitExceeded": "RequestLimitExceeded", "InternalServerError": "InternalServerError"}
TRANSACT_KIND = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete", "ConditionCheck": "ConditionCheck"}


def error_entry(err: DynamoError) -> dict:
    """A statement's `Error` member: the exception's name as a BatchStatementErrorCode."""
    name = type(err).__name__
    code = CODES.get(name, name.removesuffix("Exception"))
    out: dict[str, Any] = {"Code": code}
    if err.message is not None:
        out["Message"] = err.message
    if err.extra.get("Item") is not None:
        out["Item"] = err.extra["Item"]
    return {"Error": out}


def _single_get(plan_: ReadPlan) -> bool:
    return plan_.operation == "GetItem" and len(plan_.hash_values) == 1


def _key_identity(plan_: ReadPlan | WritePlan, request: dict, table: str) -> tuple:
    source = request["Item"] if "Item" in request else request["Key"]
    return (table, tuple(orjson.dumps(source[n]) for n in plan_.schema.names))


def _once(seen: set, identity: tuple) -> None:
    """Two statements on one item refuse the whole batch."""
    if identity in seen:
        raise ValidationException(DUPLICATES)
    seen.add(identity)


@partiql_origin
def batch_execute_statement(ctx: Context, caller: Caller, body: dict) -> dict:
    mode = body.get("ReturnConsumedCapacity")
    bound: list = []
    for spec in body["Statements"]:
        try:
            bound.append(bind(spec["Statement"], spec.get("Parameters")))
        except DynamoError as err:
            bound.append(err)
    if len({b[0].is_read for b in bound if not isinstance(b, DynamoError)}) > 1:
        raise ValidationException(MIXED_BATCH)
    planned: list = []
    seen: set = set()
    for spec, found in zip(body["Statements"], bound):
        if isinstance(found, DynamoError):
            planned.append(found)
            continue
        statement, values = found
        try:
            planned.append(_plan_one(ctx, caller, spec, statement, values, seen))
        except DynamoError as err:
            if isinstance(err, ValidationException) and err.message == DUPLICATES:
                raise
            planned.append(err)
    responses: list[dict] = []
    capacity: dict[str, dict | None] = {}
    for found in planned:
        responses.append(error_entry(found) if isinstance(found, DynamoError)
                         else _run_one(ctx, caller, mode, capacity, *found))
    result: dict[str, Any] = {"Responses": responses}
    consumed = [cc for cc in capacity.values() if cc is not None]
    if consumed:
        result["ConsumedCapacity"] = consumed
    return result


def _plan_one(ctx: Context, caller: Caller, spec: dict, statement: Any, values: dict, seen: set) -> tuple:
    """(table, operation, request, plan, values) of one statement: a single-item read or a write, on
    a key no earlier statement of the batch names (DynamoError otherwise)."""
    table = table_of(statement)
    plan_ = plan(statement, data_table(ctx, caller, table))
    request: dict[str, Any]
    if isinstance(plan_, ReadPlan):
        check_values(plan_.checks, values)
        if not _single_get(plan_):
            raise ValidationException(SINGLE_ITEM)
        key = full_key(plan_, values, partition_keys(plan_, values)[0])
        operation, request = "GetItem", {"TableName": table, "Key": key}
        if spec.get("ConsistentRead") is True:
            request["ConsistentRead"] = True
    else:
        operation, request = write_request(plan_, values, table)
        if operation == "ConditionCheck":
            raise ValidationException(EXISTS_OUTSIDE)
        if spec.get("ReturnValuesOnConditionCheckFailure") is not None:
            request["ReturnValuesOnConditionCheckFailure"] = spec["ReturnValuesOnConditionCheckFailure"]
    _once(seen, _key_identity(plan_, request, table))
    return table, operation, request, plan_, values


def _run_one(ctx: Context, caller: Caller, mode: str | None, capacity: dict[str, dict | None], table: str,
             operation: str, request: dict, plan_: Any, values: dict) -> dict:
    """One planned statement's response entry (its error's, if it fails); its capacity added to `capacity`."""
    if mode is not None:
        request["ReturnConsumedCapacity"] = mode
    try:
        out = decode(get_item(ctx, caller, request)) if operation == "GetItem" \
            else call_write(ctx, caller, operation, request)
    except DynamoError as err:
        return error_entry(err)
    capacity[table] = merge_capacity(capacity.get(table), out.get("ConsumedCapacity"))
    response: dict[str, Any] = {"TableName": table}
    item = out.get("Item")
    if item is not None and keep(plan_, item, values):
        response["Item"] = project(plan_, item)
    return response


def _in_statement(i: int, message: str) -> ValidationException:
    return ValidationException(f"Validation failed in TransactStatements[{i}]: {message}")


@partiql_origin
def execute_transaction(ctx: Context, caller: Caller, body: dict) -> dict:
    specs = body["TransactStatements"]
    bound = [bind(spec["Statement"], spec.get("Parameters")) for spec in specs]
    if len({statement.is_read for statement, _ in bound}) > 1:
        raise ValidationException(MIXED_TRANSACTION)
    planned = []
    for statement, values in bound:
        table = table_of(statement)
        planned.append((table, plan(statement, data_table(ctx, caller, table)), values))
    if bound[0][0].is_read:
        return _read_transaction(ctx, caller, body, planned)
    transact: list[dict] = []
    inserts: set[int] = set()
    writes = cast("list[tuple[str, WritePlan, dict]]", planned)  # no statement is a read: all plans write
    for i, ((table, plan_, values), spec) in enumerate(zip(writes, specs)):
        if plan_.returning is not None:
            raise _in_statement(i, TX_RETURNING)
        if plan_.negated:
            raise ValidationException(TX_UNSUPPORTED)
        if plan_.kind == "Exists" and not plan_.checks:
            raise _in_statement(i, TX_EXISTS)
        operation, request = write_request(plan_, values, table)
        if spec.get("ReturnValuesOnConditionCheckFailure") is not None:
            request["ReturnValuesOnConditionCheckFailure"] = spec["ReturnValuesOnConditionCheckFailure"]
        if operation == "PutItem":
            inserts.add(i)
        transact.append({TRANSACT_KIND[operation]: request})
    request = {"TransactItems": transact}
    for member in ("ClientRequestToken", "ReturnConsumedCapacity"):
        if body.get(member) is not None:
            request[member] = body[member]
    try:
        out = decode(transact_write_items(ctx, caller, request))
    except TransactionCanceledException as err:
        raise _duplicates(err, inserts) from None
    except ValidationException as err:
        raise plain(err) from None
    result: dict[str, Any] = {"Responses": []}
    if out.get("ConsumedCapacity"):
        result["ConsumedCapacity"] = out["ConsumedCapacity"]
    return result


def _duplicates(err: TransactionCanceledException, inserts: set[int]) -> TransactionCanceledException:
    """An INSERT whose key guard failed is reported as a duplicate key, not a failed condition."""
    reasons = [{"Code": "ValidationError", "Message": DUPLICATE}
               if i in inserts and reason["Code"] == "ConditionalCheckFailed" else reason
               for i, reason in enumerate(err.extra["CancellationReasons"])]
    return transaction_canceled(reasons)


def _read_transaction(ctx: Context, caller: Caller, body: dict, planned: list) -> dict:
    """SELECTs of full keys as one TransactGetItems, then each statement's filter and projection."""
    gets = []
    seen = set()
    for i, (table, plan_, values) in enumerate(planned):
        if not _single_get(plan_):
            raise _in_statement(i, TX_SELECT)
        check_values(plan_.checks, values)
        get = {"TableName": table, "Key": full_key(plan_, values, partition_keys(plan_, values)[0])}
        identity = _key_identity(plan_, get, table)
        if identity in seen:
            raise ValidationException(TX_SAME_ITEM)
        seen.add(identity)
        gets.append({"Get": get})
    request: dict[str, Any] = {"TransactItems": gets}
    if body.get("ReturnConsumedCapacity") is not None:
        request["ReturnConsumedCapacity"] = body["ReturnConsumedCapacity"]
    out = decode(transact_get_items(ctx, caller, request))
    responses = []
    for (_, plan_, values), response in zip(planned, out["Responses"]):
        item = response.get("Item")
        responses.append({"Item": project(plan_, item)} if item is not None and keep(plan_, item, values) else {})
    result: dict[str, Any] = {"Responses": responses}
    if out.get("ConsumedCapacity"):
        result["ConsumedCapacity"] = out["ConsumedCapacity"]
    return result

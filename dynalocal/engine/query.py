"""Query and Scan on tables and secondary indexes.

Both read a page of records (storage.ranges) and then filter, project and count it. When no
filter, projection or LSI fetch applies, the stored JSON blobs are joined into the response
bytes as they are: a page is never decoded only to be encoded again.
"""
from __future__ import annotations

from typing import Any

import orjson

from dynalocal.capacity.charge import Charge
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import compile_expressions, data_table
from dynalocal.engine.context import Context
from dynalocal.engine.keyconditions import check_multi_start, check_range_operands, java, key_value, plan_multi
from dynalocal.errors import ValidationException, invalid
from dynalocal.storage.database import TableEntry
from dynalocal.storage.index import Index
from dynalocal.storage.ranges import Page, read_range, read_scan, segment_tokens, sort_bounds, sort_matches
from dynalocal.storage.table import ItemStore
from dynalocal.values.attributes import validate_item
from dynalocal.values.keys import KeySchema

QUERY_PREFIX = "1 validation error detected: "
NO_MATCH = "The provided key element does not match the schema"
GSI_CONSISTENT = "Consistent reads are not supported on global secondary indexes"


def select_of(body: dict, operation: str) -> str:
    """The effective Select, after DynamoDB's checks of Select against the projection."""
    select = body.get("Select")
    member = ("ProjectionExpression" if "ProjectionExpression" in body
              else "AttributesToGet" if "AttributesToGet" in body else None)
    prefix = QUERY_PREFIX if operation == "Query" else ""
    if select is None:
        if member is not None:
            return "SPECIFIC_ATTRIBUTES"
        return "ALL_PROJECTED_ATTRIBUTES" if "IndexName" in body else "ALL_ATTRIBUTES"
    if select == "ALL_PROJECTED_ATTRIBUTES" and "IndexName" not in body:
        raise ValidationException(prefix + "ALL_PROJECTED_ATTRIBUTES can be used only when Querying using an IndexName")
    if select == "SPECIFIC_ATTRIBUTES":
        if member is None:
            raise ValidationException(
                prefix + "Must specify the AttributesToGet or ProjectionExpression when choosing to get "
                "SPECIFIC_ATTRIBUTES")
    elif member is not None:
        what = "only the Count" if select == "COUNT" else select
        raise ValidationException(f"{prefix}Cannot specify the {member} when choosing to get {what}")
    return select


def target_of(entry: TableEntry, body: dict, select: str, operation: str = "Query") -> Index | None:
    """The index a request reads (None for the table), with the index-specific checks."""
    name = body.get("IndexName")
    if name is None:
        return None
    index = entry.table.indexes.get(name)
    if index is None:
        if name in entry.table.vectors:  # only SearchVectors reads one (docs/behaviour/vectors.md §6)
            raise ValidationException(f"{operation} operation not supported on this index type.")
        raise ValidationException(f"The table does not have the specified index: {name}")
    if index.is_global:
        if body.get("ConsistentRead") is True:
            raise ValidationException(GSI_CONSISTENT)
        if select == "ALL_ATTRIBUTES" and index.attrs is not None:
            raise invalid(f"Select type ALL_ATTRIBUTES is not supported for global secondary index {name} "
                          "because its projection type is not ALL")
    return index


def _check_start_key(esk: dict, names: tuple[str, ...], types: dict[str, str], invalid_message: str) -> None:
    validate_item(esk)
    if len(esk) != len(names) or any(n not in esk for n in names):
        raise ValidationException(invalid_message)
    for name in names:
        if len(esk[name]) != 1 or types[name] not in esk[name]:
            raise ValidationException(NO_MATCH)


def _key_types(table_schema: KeySchema, index: Index | None) -> dict[str, str]:
    types = {}
    for schema in (table_schema, index.schema) if index is not None else (table_schema,):
        types[schema.hash_name] = schema.hash_type
        if schema.range_name is not None:
            types[schema.range_name] = schema.range_kind
    if index is not None and index.multi is not None:
        types.update(index.multi.hash_attrs + index.multi.range_attrs)
    return types


def filter_names(body: dict, compiled: Any) -> frozenset[str] | None:
    """Top-level attribute names the request's filter reads (None when unknown)."""
    for legacy in ("QueryFilter", "ScanFilter"):
        if legacy in body:
            return frozenset(body[legacy])
    flt = getattr(compiled, "filter", None) if compiled is not None else None
    if flt is None:
        return frozenset()
    for attr in ("top_level", "names", "attributes"):
        names = getattr(flt, attr, None)
        if names is not None and not callable(names):
            return frozenset(names)
    return None


def query(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    if "KeyConditionExpression" not in body and "KeyConditions" not in body:
        raise ValidationException("Either the KeyConditions or KeyConditionExpression parameter must be specified "
                                  "in the request.")
    select = select_of(body, "Query")
    compiled = compile_expressions(body, "Query")
    entry = data_table(ctx, caller, body["TableName"])
    index = target_of(entry, body, select)
    assert compiled is not None and compiled.key_condition is not None  # a key condition is required (above)
    if index is not None and index.multi is not None:
        multi = plan_multi(index.multi, compiled.key_condition, body)
        prefix, bounds, key_names = multi.prefix, multi.bounds, frozenset(index.multi.names)
    else:
        schema = index.schema if index is not None else entry.table.schema
        hash_av, op, range_avs = compiled.key_condition.resolve(schema.hash_name, schema.range_name,
                                                                schema.hash_type, schema.range_type)
        h = key_value(hash_av, schema.hash_type, schema.hash_name)
        prefix = schema.partition_prefix(h)  # size-checked; every key the query reads starts with it
        range_name = schema.range_name or ""  # range_avs is empty without a sort key
        values = [schema.sort_key(key_value(av, schema.range_kind, range_name)) for av in range_avs]
        check_range_operands(op, schema.range_type, values, range_avs, body)
        key_names = schema.name_set
        bounds = sort_bounds(prefix, op, values, escaped=index is not None)
    _check_filter(body, compiled, key_names)
    store: ItemStore = index if index is not None else entry.table
    reverse = body.get("ScanIndexForward") is False
    esk = body.get("ExclusiveStartKey")
    if esk is not None:
        if index is not None and index.multi is not None:
            _check_start_key(esk, index.key_names, _key_types(entry.table.schema, index),
                             "The provided starting key is invalid")
            check_multi_start(index.multi, multi, esk)
            start = index.start_key(esk)
        else:
            start = _query_start(entry, index, esk, h, op, values)
        bounds = bounds.after(start, reverse)
    # A GSI has its own partitions and meter; the table and its LSIs share the table's.
    metered: ItemStore = index if index is not None and index.is_global else entry.table
    part = metered.partition_index(prefix)
    charge = ctx.capacity.charge(entry)
    charge.admit(0, part, index)
    page = read_range(store, bounds, reverse, body.get("Limit"))
    if index is None and (entry.table.schema.range_name is None or op == "EQ"):
        page.last_key = None  # a full-key query reads at most one item: nothing to resume
    return respond(body, entry, index, compiled, select, page, charge, [(part, 1.0)], prefix)


def _check_filter(body: dict, compiled: Any, key_names: frozenset[str]) -> None:
    """A Query's filter may not read the queried key's attributes."""
    if "QueryFilter" in body:
        bad = next((n for n in body["QueryFilter"] if n in key_names), None)
        if bad is not None:
            raise ValidationException(
                f"QueryFilter can only contain non-primary key attributes: Primary key attribute: {bad}")
    else:
        read = filter_names(body, compiled)
        bad = next((n for n in sorted(read) if n in key_names), None) if read else None
        if bad is not None:
            raise ValidationException(
                f"Filter Expression can only contain non-primary key attributes: Primary key attribute: {bad}")


def _query_start(entry: TableEntry, index: Index | None, esk: dict, h: str, op: str | None,
                 values: list[bytes]) -> bytes:
    """Validate a Query's ExclusiveStartKey against the key condition; return its store key."""
    table_schema = entry.table.schema
    if index is None and table_schema.range_name is None:
        shown = ", ".join(f"{k}={java(v)}" for k, v in esk.items())
        raise ValidationException(f"The provided exclusive start key is invalid: ExclusiveStartKey: {{{shown}}}")
    names = index.key_names if index is not None else table_schema.names
    _check_start_key(esk, names, _key_types(table_schema, index), "The provided starting key is invalid")
    schema = index.schema if index is not None else table_schema
    if esk[schema.hash_name][schema.hash_type] != h:
        raise ValidationException("The provided starting key is outside query boundaries based on provided conditions")
    if schema.range_name is not None:
        sort = schema.sort_key(esk[schema.range_name][schema.range_type])
        if not sort_matches(op, values, sort):
            raise ValidationException("The provided starting key does not match the range key predicate")
    return index.start_key(esk) if index is not None else table_schema.encode_item(esk)


def scan(ctx: Context, caller: Caller, body: dict) -> dict | bytes:
    segment, total = body.get("Segment"), body.get("TotalSegments")
    if segment is not None and total is None:
        raise ValidationException("The TotalSegments parameter is required but was not present in the request when "
                                  "Segment parameter is present")
    if total is not None and segment is None:
        raise ValidationException("The Segment parameter is required but was not present in the request when "
                                  "parameter TotalSegments is present")
    if segment is not None and segment >= total:
        raise ValidationException("The Segment parameter is zero-based and must be less than parameter TotalSegments: "
                                  f"Segment: {segment} is not less than TotalSegments: {total}")
    select = select_of(body, "Scan")
    compiled = compile_expressions(body, "Scan")
    entry = data_table(ctx, caller, body["TableName"])
    index = target_of(entry, body, select, "Scan")
    store: ItemStore = index if index is not None else entry.table
    segment, total = segment or 0, total or 1
    start = None
    esk = body.get("ExclusiveStartKey")
    if esk is not None:
        table_schema = entry.table.schema
        names = index.key_names if index is not None else table_schema.names
        _check_start_key(esk, names, _key_types(table_schema, index),
                         "The provided starting key is invalid: " + NO_MATCH)
        start = index.start_key(esk) if index is not None else table_schema.encode_item(esk)
        lo, hi = segment_tokens(segment, total)
        if not lo <= int.from_bytes(start[:8], "big") < hi:
            raise ValidationException("The provided starting key is invalid: Exclusive start key must lie within "
                                      "the segment")
    metered: ItemStore = index if index is not None and index.is_global else entry.table
    lo_key = segment_tokens(segment, total)[0].to_bytes(8, "big")
    first = metered.partition_index(start if start is not None and start >= lo_key else lo_key)
    charge = ctx.capacity.charge(entry)
    charge.admit(0, first, index)  # admitted where the page starts reading
    page = read_scan(store, start, body.get("Limit"), segment, total)
    return respond(body, entry, index, compiled, select, page, charge, _scan_shares(metered, page, first))


def _scan_shares(metered: ItemStore, page: Page, first: int) -> list[tuple[int, float]]:
    """(partition, fraction) of a Scan page's units: in proportion to the bytes read there."""
    total = page.read_bytes
    if not total:
        return [(first, 1.0)]
    read: dict[int, int] = {}
    for leaf, a, b in page.spans:
        p = metered.partition_index(leaf.key(a))
        if p == metered.partition_index(leaf.key(b - 1)):  # nearly always: a span lies in one partition
            read[p] = read.get(p, 0) + sum(leaf.sizes[a:b])
            continue
        for key, size in zip(leaf.key_list(a, b), leaf.sizes[a:b]):
            p = metered.partition_index(key)
            read[p] = read.get(p, 0) + size
    return [(p, size / total) for p, size in sorted(read.items()) if size]


def respond(body: dict, entry: TableEntry, index: Index | None, compiled: Any, select: str, page: Page,
            charge: Charge, shares: list[tuple[int, float]], pk: bytes | None = None) -> bytes:
    """Filter, fetch, project and count a page; charge its units (to the partitions `shares` says,
    against partition key `pk` when there is one); serialise the response."""
    consistent = body.get("ConsistentRead") is True
    flt = compiled.filter if compiled is not None else None
    projection = compiled.projection if compiled is not None else None
    fetch = index is not None and not index.is_global and index.attrs is not None and (
        select == "ALL_ATTRIBUTES"
        or (select == "SPECIFIC_ATTRIBUTES" and projection is not None and not index.projects(projection.top_level))
        or (flt is not None and not _projects(index, filter_names(body, compiled))))
    fetched: list[int] = []  # sizes of the base items an LSI query fetched
    out = [b"{"]  # then '"Items":[...],' unless COUNT
    if flt is None and projection is None and not fetch:
        count = page.count
        if select != "COUNT":
            out += [b'"Items":[', page.joined(), b"],"]
    else:
        count = 0
        items: list[dict] = []
        table = entry.table
        for blob in page.blobs:
            item = orjson.loads(blob)
            if fetch:
                full = table.get(table.schema.encode_item(item))
                if full is not None:
                    fetched.append(full[1])
                    item = orjson.loads(full[0])
            if flt is not None and not flt.matches(item):
                continue
            count += 1
            if select != "COUNT":
                items.append(projection.apply(item) if projection is not None else item)
        if select != "COUNT":
            out += [b'"Items":', orjson.dumps(items), b","]
    out.append(b'"Count":%d,"ScannedCount":%d' % (count, page.count))
    if page.last_key is not None:
        last = orjson.loads(page.last_blob())
        names = index.key_names if index is not None else entry.table.schema.names
        out += [b',"LastEvaluatedKey":', orjson.dumps({n: last[n] for n in names})]
    charge.page(page.read_bytes, consistent, shares, pk, index, fetched)
    cc = charge.consumed(body, body["TableName"])
    if cc is not None:
        out += [b',"ConsumedCapacity":', orjson.dumps(cc)]
    out.append(b"}")
    return b"".join(out)


def _projects(index: Index, names: frozenset[str] | None) -> bool:
    return names is not None and index.projects(names)

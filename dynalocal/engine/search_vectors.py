"""SearchVectors: validation in DynamoDB's order, the exact top K of one vector index, projection
and the approximate VectorSearchRequestBytes (docs/behaviour/vectors.md §4-5).
"""
from __future__ import annotations

from typing import Any, cast

import numpy as np

from dynalocal.engine import vector_specs
from dynalocal.engine.caller import Caller
from dynalocal.engine.common import data_table
from dynalocal.engine.context import Context
from dynalocal.errors import ValidationException
from dynalocal.expressions import ast as A
from dynalocal.expressions import searchcond
from dynalocal.expressions.compile import check_unused, template
from dynalocal.expressions.projection import Projection
from dynalocal.storage.vectorcheck import F32_MAX
from dynalocal.storage.vectors import MIN_WRITE_BYTES, VectorIndex
from dynalocal.values import numbers
from dynalocal.values.attributes import item_size

MAX_TOP_K = 100
MAX_RESPONSE_BYTES = 16 << 20  # no paging: results past 16 MB are left out (docs/behaviour/vectors.md §4)
INVALID_VECTOR = ("Search vector contains invalid values. All values in the search vector must be a 32-bit "
                  "floating-point number attribute")


def search_vectors(ctx: Context, caller: Caller, body: dict) -> dict:
    """The handler: checks, the index's top K, the answer."""
    k = body["TopK"]
    if k > MAX_TOP_K:  # before the table is looked up
        raise ValidationException(f"Provided TopK value '{k}' is out of valid range. The value must be between 1 and "
                                  f"{MAX_TOP_K} inclusive")
    query = _query_vector(body["SearchVector"])
    entry = data_table(ctx, caller, body["TableName"])
    index = _index(ctx, entry, body["IndexName"])
    if len(query) != index.dimensions:
        raise ValidationException(f"Input search vector dimension {len(query)} does not match vector index "
                                  f"dimension {index.dimensions}")
    names = body.get("ExpressionAttributeNames") or {}
    values = body.get("ExpressionAttributeValues") or {}
    used_names: set[str] = set()
    used_values: set[str] = set()
    group, filters, empty = _condition(index, body.get("SearchConditionExpression"), names, values,
                                       used_names, used_values)
    projection = _projection(body.get("ProjectionExpression"), names, used_names)
    check_unused(names, values, used_names, used_values)
    found, examined = ([], 0) if empty else index.search(group, query, k, filters)
    results, vectors_out = _results(entry.table, index, found, projection)
    out: dict[str, Any] = {"SearchResults": results}
    searched = float(max(MIN_WRITE_BYTES, examined * index.dimensions * 4) + vectors_out * index.dimensions * 4)
    ctx.capacity.vector_record(entry, None, searched)  # the table's search meter (capacity/vector_meter.py)
    if body.get("ReturnConsumedCapacity", "NONE") != "NONE":
        out["ConsumedCapacity"] = {"VectorSearchRequestBytes": searched}
    return out


def _query_vector(elements: list) -> np.ndarray:
    """The search vector as float64, each element a finite f32-range number, else INVALID_VECTOR."""
    floats: list[float] = []
    append = floats.append  # one plain loop: 768 elements cost ~0.1 ms, numpy's string parsing ~0.5 ms
    try:
        for e in elements:
            text = e["N"] if type(e) is dict and len(e) == 1 else None
            if type(text) is not str:
                raise ValidationException(INVALID_VECTOR)
            append(float(text))
    except (KeyError, ValueError):
        raise ValidationException(INVALID_VECTOR) from None
    numbers_ = np.array(floats, dtype=np.float64)
    if not (np.isfinite(numbers_).all() and (np.abs(numbers_) <= F32_MAX).all()):
        raise ValidationException(INVALID_VECTOR)
    return numbers_.astype(np.float32).astype(np.float64)  # f32 elements, f64 accumulation


def _index(ctx: Context, entry: Any, name: str) -> VectorIndex:
    """The ACTIVE vector index named; unknown (or not yet searchable) and backfilling ones refused."""
    vector_specs.settle(ctx, entry)
    spec = next((s for s in entry.vector_indexes if s["IndexName"] == name), None)
    index = entry.table.vectors.get(name)
    if spec is not None and spec["IndexStatus"] == "CREATING" and spec.get("Backfilling"):
        raise ValidationException(f"Cannot search backfilling vector index: {name}")
    if spec is None or index is None or spec["IndexStatus"] != "ACTIVE":
        raise ValidationException(f"The table does not have the specified index: {name}")
    if index.pending:  # --vector-index-lag-ms: the writes due by now become visible
        index.catch_up(ctx.clock())
    return index


def _condition(index: VectorIndex, text: str | None, names: dict, values: dict, used_names: set[str],
               used_values: set[str]) -> tuple[object, dict[int, object], bool]:
    """(HASH value, inline filters by position, whether the terms contradict each other)."""
    if text is None:
        if index.hash is not None:
            raise ValidationException("SearchConditionExpression must be provided when SearchSchema has a HASH key")
        return None, {}, False
    schema = dict(index.typed)
    positions = {name: i for i, (name, _) in enumerate(index.filters)}
    wanted: dict[str, object] = {}
    empty = False
    for left, placeholder in searchcond.parse(text):
        if left.startswith("#"):
            if left not in names:
                raise ValidationException(f"{searchcond.PREFIX}An expression attribute name used in the document "
                                          f"path is not defined; attribute name: {left}")
            used_names.add(left)
            left = names[left]
        if placeholder not in values:
            raise ValidationException(f"{searchcond.PREFIX}An expression attribute value used in expression is "
                                      f"not defined; attribute value: {placeholder}")
        used_values.add(placeholder)
        if left not in schema:
            raise ValidationException("SearchConditionExpression must not contain any attributes that is not in "
                                      f"SearchSchema. Invalid attribute: {left}")
        ((kind, value),) = values[placeholder].items()
        if kind != schema[left]:
            raise ValidationException(f"Type of '{left}' attribute in SearchConditionExpression ({kind}) does not "
                                      f"match type in search schema ({schema[left]})")
        if value == "" and left == index.hash:
            raise ValidationException("One or more parameter values are not valid. The AttributeValue for a key "
                                      f"attribute cannot contain an empty string value. Key: {left}")
        if kind == "N":
            value = numbers.canonical(value)
        if left in wanted and wanted[left] != value:
            empty = True  # a = :x AND a = :y with x != y matches nothing
        wanted[left] = value
    if index.hash is not None and index.hash not in wanted:
        raise ValidationException("SearchConditionExpression must be provided when SearchSchema has a HASH key")
    filters = {positions[name]: value for name, value in wanted.items() if name != index.hash}
    return wanted.get(index.hash) if index.hash is not None else None, filters, empty


def _projection(text: str | None, names: dict, used_names: set[str]) -> Projection | None:
    if text is None:
        return None
    if text == "":
        raise ValidationException("Invalid ProjectionExpression: The expression can not be empty;")
    tpl = template("ProjectionExpression", text)
    for name in tpl.names:
        if name not in names:
            raise ValidationException("Invalid ProjectionExpression: An expression attribute name used in the "
                                      f"document path is not defined; attribute name: {name}")
    for check in tpl.checks:
        check(names, {})
    used_names.update(tpl.names)
    paths = cast("tuple[A.Path, ...]", tpl.payload)  # a projection template's payload
    return Projection([A.resolve_path(p, names) for p in paths])


def _results(table: Any, index: VectorIndex, found: list[tuple[bytes, float]],
             projection: Projection | None) -> tuple[list[dict], int]:
    """SearchResults (within 16 MB) and how many of them carry the vector."""
    out = []
    size = 0
    with_vector = 0
    attribute = index.attribute
    for key, score in found:
        if projection is None:  # the common case: the item without its vector, decoded once
            shown = index.result(table, key)
            if shown is None:  # cannot happen: the index follows every write
                continue
            visible, item_bytes = shown
            size += item_bytes + 32
            if size > MAX_RESPONSE_BYTES:
                break
            out.append({"Item": visible, "Score": score})
            continue
        item = index.item(table, key)  # the table's, or under a lag the one still indexed
        if item is None:
            continue
        visible = item if index.projected is None else {k: v for k, v in item.items() if k in index.projected}
        if attribute in visible:
            visible[attribute] = _f32_list(visible[attribute])
        visible = projection.apply(visible)
        size += item_size(visible) + 32
        if size > MAX_RESPONSE_BYTES:
            break
        with_vector += attribute in visible
        out.append({"Item": visible, "Score": score})
    return out, with_vector


def _f32_list(av: dict) -> dict:
    """The vector as the index holds it: each element at float32 precision."""
    return {"L": [{"N": numbers.canonical(str(np.float32(float(e["N"]))))} for e in av["L"]]}

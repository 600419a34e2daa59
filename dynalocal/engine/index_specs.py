"""Checks on a key schema, projection and index throughput: shared by CreateTable (tables.py)
and UpdateTable's GSI Create (index_updates.py), so both answer with the same messages."""
from __future__ import annotations

from collections.abc import Iterable

from dynalocal.errors import ValidationException, invalid
from dynalocal.values.multikey import MAX_ELEMENTS


def check_key_schema(elements: list[dict], types: dict[str, str]) -> None:
    """Every key attribute defined; HASH first, RANGE second, not both on the same attribute."""
    if any(e["AttributeName"] not in types for e in elements):
        raise invalid(f"Some index key attributes are not defined in AttributeDefinitions. "
                      f"Keys: [{', '.join(e['AttributeName'] for e in elements)}], "
                      f"AttributeDefinitions: [{', '.join(types)}]")
    if len(elements) == 2 and elements[0]["AttributeName"] == elements[1]["AttributeName"]:
        raise ValidationException("Both the Hash Key and the Range Key element in the KeySchema have the same name")
    if elements[0]["KeyType"] != "HASH":
        raise ValidationException("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    if len(elements) == 2 and elements[1]["KeyType"] != "RANGE":
        raise ValidationException("Invalid KeySchema: The second KeySchemaElement is not a RANGE key type")


def check_gsi_key_schema(elements: list[dict], types: dict[str, str]) -> None:
    """A GSI's key: 1 to 4 HASH elements, then 0 to 4 RANGE elements, each attribute once
    (docs/behaviour/multikey-gsi.md); one HASH and at most one RANGE answer as check_key_schema does."""
    kinds = [e["KeyType"] for e in elements]
    if len(elements) <= 2 and kinds.count("HASH") == 1:
        check_key_schema(elements, types)
        return
    if any(e["AttributeName"] not in types for e in elements):
        check_key_schema(elements, types)  # the undefined-attribute message
    if kinds[0] != "HASH":
        raise ValidationException("Invalid KeySchema: The first KeySchemaElement is not a HASH key type")
    names = [e["AttributeName"] for e in elements]
    repeated = next((n for i, n in enumerate(names) if n in names[:i]), None)
    if repeated is not None:
        raise invalid(f"Invalid KeySchema: The attribute {repeated} appears more than once in the KeySchema")
    if "RANGE" in kinds and "HASH" in kinds[kinds.index("RANGE"):]:
        raise invalid("Invalid KeySchema: Every HASH key element must come before every RANGE key element")
    for kind in ("HASH", "RANGE"):
        if kinds.count(kind) > MAX_ELEMENTS:
            raise invalid(f"Invalid KeySchema: A global secondary index may have at most {MAX_ELEMENTS} {kind} "
                          "key elements")


def check_projection(index: dict) -> None:
    """A ProjectionType is given; KEYS_ONLY and ALL take no NonKeyAttributes."""
    projection = index["Projection"]
    kind = projection.get("ProjectionType")
    if kind is None:
        raise invalid("Unknown ProjectionType: null")
    if kind in ("KEYS_ONLY", "ALL") and projection.get("NonKeyAttributes"):
        raise invalid(f"ProjectionType is {kind}, but NonKeyAttributes is specified")


def check_gsi_throughput(index: dict, billing: str) -> None:
    """A GSI has ProvisionedThroughput exactly when the table's BillingMode is PROVISIONED."""
    name = index["IndexName"]
    if billing == "PAY_PER_REQUEST" and index.get("ProvisionedThroughput") is not None:
        raise invalid(f"ProvisionedThroughput should not be specified for index: {name} when BillingMode is "
                      "PAY_PER_REQUEST")
    if billing == "PROVISIONED" and index.get("ProvisionedThroughput") is None:
        raise invalid(f"ProvisionedThroughput must be specified for index: {name}")


MAX_NON_KEY = 100  # projected non-key attributes, summed over a table's secondary and vector indexes


def non_key_count(index: dict) -> int:
    """What an index counts toward MAX_NON_KEY: its NonKeyAttributes, and for a vector index its vector
    attribute and each INLINE_FILTER element (HASH ones do not count; docs/behaviour/vectors.md §2)."""
    count = len(index["Projection"].get("NonKeyAttributes") or ())
    if "VectorAttribute" in index:
        count += 1 + sum(e["SearchSchemaElementType"] == "INLINE_FILTER" for e in index.get("SearchSchema") or ())
    return count


def check_non_key_total(indexes: Iterable[dict]) -> None:
    """The projected non-key attributes of all of a table's indexes (GSIs, LSIs, vector indexes) within the limit."""
    if sum(non_key_count(i) for i in indexes) > MAX_NON_KEY:
        raise invalid("The sum of the NonKeyAttributes across all secondary indexes exceeds the limit of "
                      f"{MAX_NON_KEY}")

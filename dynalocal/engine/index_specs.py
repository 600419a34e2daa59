"""Checks on a key schema, projection and index throughput: shared by CreateTable (tables.py)
and UpdateTable's GSI Create (index_updates.py), so both answer with the same messages."""
from __future__ import annotations

from dynalocal.errors import ValidationException, invalid


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

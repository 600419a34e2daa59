"""AttributeValues: one pass that type-checks, validates, canonicalises and sizes.

Input is wire JSON as orjson decodes it. Validation mutates the freshly decoded request
in place (numbers become canonical text, binaries canonical base64) instead of copying,
because these dicts belong to the request and are stored as they are afterwards.
"""
from __future__ import annotations

import base64
import binascii
from typing import Any

from dynalocal.errors import SerializationException, ValidationException, invalid
from dynalocal.values import numbers

MAX_ITEM_SIZE = 409_600
MAX_DEPTH = 32  # the item itself is level 1
MAX_NAME_BYTES = 65_535
SHORT_NAME = MAX_NAME_BYTES // 4  # characters: at most this many cannot exceed MAX_NAME_BYTES
TYPES = ("S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL")

EMPTY = "Supplied AttributeValue is empty, must contain exactly one of the supported datatypes"
MULTIPLE = ("Supplied AttributeValue has more than one datatypes set, "
            "must contain exactly one of the supported datatypes")
# DynamoDB's text (captured against DynamoDB by paritysuite/dynamodb-conformance, nestingDepth.test.ts)
TOO_DEEP = ("Nesting Levels have exceeded supported limits: "
            "Attributes in the item have nested levels beyond supported limit")
MAP_FROM_LIST = ("Unrecognized collection type java.util.Map<java.lang.String, "
                 "com.amazonaws.dynamodb.v20120810.AttributeValue>")


def json_kind(value: Any) -> str:
    """The Jackson token name DynamoDB's messages use for a JSON value."""
    if value is True:
        return "TRUE_VALUE"
    if value is False:
        return "FALSE_VALUE"
    if isinstance(value, int):
        return "NUMBER_VALUE"
    if isinstance(value, float):
        return "DECIMAL_VALUE"
    if isinstance(value, str):
        return "STRING_VALUE"
    return "VALUE_NULL"


def _string(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        raise SerializationException("Start of structure or map found where not expected")
    if isinstance(value, list):
        raise SerializationException("Unrecognized collection type class java.lang.String")
    raise SerializationException(f"{json_kind(value)} cannot be converted to String")


def _blob(value: Any) -> bytes:
    if not isinstance(value, str):
        raise SerializationException("only base-64-encoded strings are convertible to bytes")
    if len(value) % 4:
        raise SerializationException(
            f"Base64 encoded length is expected a multiple of 4 bytes but found: {len(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise SerializationException("Invalid last non-pad Base64 character dectected") from None


def utf8_len(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def _name_size(name: str) -> int:
    size = utf8_len(name)
    if size == 0:
        raise invalid("Empty attribute name")
    if size > MAX_NAME_BYTES:
        raise invalid(f"Attribute name exceeds the maximum length of {MAX_NAME_BYTES} bytes")
    return size


def _set_members(kind: str, members: Any) -> list:
    if not isinstance(members, list):
        if isinstance(members, dict):
            raise SerializationException("Start of structure or map found where not expected")
        raise SerializationException("Unexpected field type")
    if not members:
        if kind == "SS":
            raise invalid("An string set  may not be empty")
        if kind == "NS":
            raise invalid("An number set  may not be empty")
        raise invalid("Binary sets should not be empty")
    return members


def validate_value(av: Any, depth: int = 2) -> int:
    """Validate one AttributeValue in place; return its size in bytes."""
    if not isinstance(av, dict):
        if isinstance(av, list):
            raise SerializationException(
                "Unrecognized collection type class com.amazonaws.dynamodb.v20120810.AttributeValue")
        raise SerializationException("Unexpected value type in payload")
    first = next(iter(av), None)
    if len(av) != 1 or first not in TYPES or av[first] is None:
        for tag in [t for t, v in av.items() if v is None]:
            del av[tag]  # a JSON null member counts as absent
        known = [t for t in av if t in TYPES]
        if not known:
            raise ValidationException(EMPTY)
        if len(known) > 1:
            raise ValidationException(MULTIPLE)
        for tag in [t for t in av if t not in TYPES]:
            del av[tag]
    ((tag, value),) = av.items()
    if tag == "S":
        return utf8_len(_string(value))
    if tag == "N":
        av["N"] = text = numbers.canonical(_string(value))
        return numbers.size(text)
    if tag == "M":
        if not isinstance(value, dict):
            if isinstance(value, list):
                raise SerializationException(MAP_FROM_LIST)
            raise SerializationException("Unexpected field type")
        if depth > MAX_DEPTH:
            raise ValidationException(TOO_DEEP)
        total = 3
        for name, inner in value.items():
            total += 1 + utf8_len(name) + validate_value(inner, depth + 1)
        return total
    if tag == "L":
        if not isinstance(value, list):
            raise SerializationException("Unexpected field type")
        if depth > MAX_DEPTH:
            raise ValidationException(TOO_DEEP)
        total = 3
        for inner in value:
            total += 1 + validate_value(inner, depth + 1)
        return total
    if tag == "B":
        raw = _blob(value)
        av["B"] = base64.b64encode(raw).decode()
        return len(raw)
    if tag == "BOOL":
        if not isinstance(value, bool):
            av["BOOL"] = _coerce_bool(value)
        return 1
    if tag == "NULL":
        if (value if isinstance(value, bool) else _coerce_bool(value)) is not True:
            raise invalid("Null attribute value types must have the value of true")
        av["NULL"] = True
        return 1
    if tag == "SS":
        members = [_string(m) for m in _set_members(tag, value)]
        if len(set(members)) != len(members):
            raise invalid(f"Input collection [{', '.join(members)}] contains duplicates.")
        return sum(utf8_len(m) for m in members)
    if tag == "NS":
        members = [numbers.canonical(_string(m)) for m in _set_members(tag, value)]
        if len(set(members)) != len(members):
            raise ValidationException("Input collection contains duplicates")
        av["NS"] = members
        return sum(numbers.size(m) for m in members)
    # BS
    raws = [_blob(m) for m in _set_members(tag, value)]
    if len(set(raws)) != len(raws):
        raise invalid(f"Input collection [{', '.join(value)}]of type BS contains duplicates.")
    av["BS"] = [base64.b64encode(r).decode() for r in raws]
    return sum(len(r) for r in raws)


def _coerce_bool(value: Any) -> bool:
    """DynamoDB's JSON reader coerces a few strings to booleans and refuses numbers."""
    if isinstance(value, str):
        lowered = value.lower()
        if lowered in ("true", "1", "yes"):
            return True
        if lowered in ("false", "0", "no"):
            return False
        raise SerializationException("Unexpected token received from parser")
    if isinstance(value, (dict, list)):
        raise SerializationException("Start of structure or map found where not expected")
    raise SerializationException(f"{json_kind(value)} cannot be converted to Boolean")


def validate_item(item: Any) -> int:
    """Validate a whole item (attribute name -> AttributeValue) in place; return its size."""
    if not isinstance(item, dict):
        raise SerializationException("Unexpected field type")
    total = 0
    for name, av in item.items():
        # A string attribute with a name too short to break a limit needs only sizing.
        if type(av) is dict and len(av) == 1:
            value = av.get("S")
            if type(value) is str and 0 < len(name) <= SHORT_NAME:
                total += (len(name) if name.isascii() else len(name.encode("utf-8"))) + (
                    len(value) if value.isascii() else len(value.encode("utf-8")))
                continue
        total += _name_size(name) + validate_value(av)
    return total


def item_size(item: dict) -> int:
    """Size of an already-valid item (names plus values), DynamoDB's 400 KB rule."""
    total = 0
    for name, av in item.items():  # utf8_len and value_size's commonest cases, inlined
        total += len(name) if name.isascii() else len(name.encode("utf-8"))
        ((tag, value),) = av.items()
        if tag == "S":
            total += len(value) if value.isascii() else len(value.encode("utf-8"))
        elif tag == "N":
            total += numbers.size(value)
        else:
            total += value_size(av)
    return total


def value_size(av: dict) -> int:
    """Size of an already-valid AttributeValue."""
    ((tag, value),) = av.items()
    if tag == "S":
        return utf8_len(value)
    if tag == "N":
        return numbers.size(value)
    if tag == "B":
        return len(base64.b64decode(value))
    if tag == "M":
        return 3 + sum(1 + utf8_len(k) + value_size(v) for k, v in value.items())
    if tag == "L":
        return 3 + sum(1 + value_size(v) for v in value)
    if tag == "SS":
        return sum(utf8_len(m) for m in value)
    if tag == "NS":
        return sum(numbers.size(m) for m in value)
    if tag == "BS":
        return sum(len(base64.b64decode(m)) for m in value)
    return 1

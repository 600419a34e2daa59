"""AttributeValue semantics the expression language needs: equality, order, contains, size.

Values are wire dicts with canonical numbers and canonical base64, so equal numbers and
equal binaries have equal text; only ordering and substring tests decode.
"""
from __future__ import annotations

from base64 import b64decode

from dynalocal.values import numbers

SETS = frozenset(("SS", "NS", "BS"))
_TEXT_EQUAL = frozenset(("S", "N", "B", "BOOL", "NULL"))
LONG_NAMES = {
    "S": "STRING", "N": "NUMBER", "B": "BINARY", "BOOL": "BOOLEAN", "NULL": "NULL",
    "L": "LIST", "M": "MAP", "SS": "STRING_SET", "NS": "NUMBER_SET", "BS": "BINARY_SET",
}


def tag_of(av: dict) -> str:
    """The type tag of an AttributeValue ("S", "N", "M", ...)."""
    for tag in av:
        return tag
    return ""


def equal(a: dict, b: dict) -> bool:
    """DynamoDB equality: same type and same content (sets unordered, lists ordered)."""
    for ta, va in a.items():
        break
    for tb, vb in b.items():
        break
    if ta != tb:
        return False
    if ta in _TEXT_EQUAL:
        return va == vb
    if ta in SETS:
        return len(va) == len(vb) and set(va) == set(vb)
    if ta == "L":
        return len(va) == len(vb) and all(equal(x, y) for x, y in zip(va, vb))
    if ta == "M":
        return va.keys() == vb.keys() and all(equal(v, vb[k]) for k, v in va.items())
    return False


def compare_numbers(a: str, b: str) -> int:
    """-1/0/1 for two canonical numbers; plain non-negative integers avoid Decimal."""
    if a == b:
        return 0
    if a.isdigit() and b.isdigit():
        if len(a) != len(b):
            return -1 if len(a) < len(b) else 1
        return -1 if a < b else 1
    return numbers.compare(a, b)


def order(a: dict, b: dict) -> int | None:
    """-1/0/1 for two values of the same scalar type (S, N, B); None when not comparable."""
    for ta, va in a.items():
        break
    for tb, vb in b.items():
        break
    if ta != tb:
        return None
    if ta == "N":
        return compare_numbers(va, vb)
    if ta == "S":
        return (va > vb) - (va < vb)
    if ta == "B":
        x, y = b64decode(va), b64decode(vb)
        return (x > y) - (x < y)
    return None


def contains(a: dict, b: dict) -> bool:
    """contains(a, b): substring, byte subsequence, set member or list element."""
    for ta, va in a.items():
        break
    for tb, vb in b.items():
        break
    if ta == "S":
        return tb == "S" and vb in va
    if ta == "L":
        return any(equal(e, b) for e in va)
    if ta == "SS":
        return tb == "S" and vb in va
    if ta == "NS":
        return tb == "N" and vb in va
    if ta == "BS":
        return tb == "B" and vb in va
    if ta == "B":
        return tb == "B" and b64decode(vb) in b64decode(va)
    return False


def begins_with(a: dict, b: dict) -> bool:
    """begins_with(a, b) for two strings or two binaries."""
    for ta, va in a.items():
        break
    for tb, vb in b.items():
        break
    if ta != tb:
        return False
    if ta == "S":
        return va.startswith(vb)
    if ta == "B":
        return b64decode(va).startswith(b64decode(vb))
    return False


def size(av: dict) -> int | None:
    """size(): characters, bytes or element count; None for types without a size."""
    for tag, value in av.items():
        break
    if tag == "S" or tag in SETS or tag == "L" or tag == "M":
        return len(value)
    if tag == "B":
        return len(b64decode(value))
    return None


def describe(av: dict) -> str:
    """Render a value as DynamoDB's messages do: `AttributeValue: {N:5}`."""
    tag = tag_of(av)
    value = av[tag]
    if isinstance(value, list):
        shown = "[" + ", ".join(v if isinstance(v, str) else describe(v) for v in value) + "]"
    elif isinstance(value, dict):
        shown = "{" + ", ".join(f"{k}={describe(v)}" for k, v in value.items()) + "}"
    elif isinstance(value, bool):
        shown = "true" if value else "false"
    else:
        shown = str(value)
    return f"AttributeValue: {{{tag}:{shown}}}"

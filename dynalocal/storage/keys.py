"""Primary keys: validation against a key schema and the order-preserving key encoding.

Encoded key layout (bytes, compared bytewise):

    token (8 bytes, big-endian hash of the partition key) | len(pk) (2 bytes) | pk bytes | sort bytes

so the byte order of encoded keys is: by token, then by partition key, then by sort key in
DynamoDB's order (numbers numerically, strings and binary by bytes). A partition owns a
contiguous token range, which is therefore a contiguous range of encoded keys, and all
items of one partition key are contiguous and sorted by sort key.
"""
from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass

from ..errors import ValidationException, invalid
from . import numbers

MAX_HASH_BYTES = 2048
MAX_RANGE_BYTES = 1024
TOKEN_BITS = 64
TOKEN_SPACE = 1 << TOKEN_BITS

NO_MATCH = "The provided key element does not match the schema"


def raw_bytes(kind: str, value: str) -> bytes:
    """The bytes a key value is hashed and sized by: UTF-8, canonical number text, or blob."""
    if kind == "S":
        return value.encode("utf-8")
    if kind == "N":
        return value.encode("ascii")
    return base64.b64decode(value)


def sort_bytes(kind: str, value: str) -> bytes:
    """Order-preserving bytes of a sort key value."""
    if kind == "N":
        return numbers.sort_bytes(value)
    return raw_bytes(kind, value)


def token_of(pk_raw: bytes) -> bytes:
    """The 8-byte hash token that places a partition key in a partition."""
    return hashlib.blake2b(pk_raw, digest_size=8).digest()


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with `prefix`."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes((trimmed[-1] + 1,))


@dataclass(frozen=True, slots=True)
class KeySchema:
    """A table's (or index's) key: attribute names and their scalar types."""

    hash_name: str
    hash_type: str
    range_name: str | None = None
    range_type: str | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return (self.hash_name,) if self.range_name is None else (self.hash_name, self.range_name)

    def partition_prefix(self, hash_value: str) -> bytes:
        """token | len | pk: the encoded-key prefix shared by all items of one partition key."""
        raw = raw_bytes(self.hash_type, hash_value)
        return token_of(raw) + len(raw).to_bytes(2, "big") + raw

    def encode(self, hash_value: str, range_value: str | None) -> bytes:
        prefix = self.partition_prefix(hash_value)
        if self.range_name is None:
            return prefix
        return prefix + sort_bytes(self.range_type, range_value)  # type: ignore[arg-type]

    def key_of(self, item: dict) -> dict:
        """The key attributes of a stored item."""
        if self.range_name is None:
            return {self.hash_name: item[self.hash_name]}
        return {self.hash_name: item[self.hash_name], self.range_name: item[self.range_name]}

    def encode_item(self, item: dict) -> bytes:
        """Encoded key of a valid stored item."""
        h = item[self.hash_name][self.hash_type]
        r = item[self.range_name][self.range_type] if self.range_name is not None else None
        return self.encode(h, r)

    def check_item(self, item: dict) -> bytes:
        """Validate the key attributes of an item being written; return its encoded key."""
        h = self._item_value(item, self.hash_name, self.hash_type)
        r = self._item_value(item, self.range_name, self.range_type) if self.range_name else None
        self._check_sizes(h, r)
        return self.encode(h, r)

    def check_key(self, key: dict, empty_prefix: str = "One or more parameter values were invalid: ") -> bytes:
        """Validate a request Key map (exactly the key attributes); return its encoded key."""
        if len(key) != len(self.names):
            raise ValidationException(NO_MATCH)
        h = self._key_value(key, self.hash_name, self.hash_type, empty_prefix)
        r = self._key_value(key, self.range_name, self.range_type, empty_prefix) if self.range_name else None
        self._check_sizes(h, r)
        return self.encode(h, r)

    def _item_value(self, item: dict, name: str, kind: str) -> str:
        av = item.get(name)
        if av is None:
            raise invalid(f"Missing the key {name} in the item")
        value = av.get(kind)
        if value is None:
            ((actual, _),) = av.items()
            raise invalid(f"Type mismatch for key {name} expected: {kind} actual: {actual}")
        if value == "":
            what = "string" if kind == "S" else "binary"
            raise ValidationException(
                "One or more parameter values are not valid. The AttributeValue for a key attribute "
                f"cannot contain an empty {what} value. Key: {name}")
        return value

    def _key_value(self, key: dict, name: str, kind: str, empty_prefix: str) -> str:
        av = key.get(name)
        if av is None:
            raise ValidationException(NO_MATCH)
        value = av.get(kind)
        if value is None:
            raise ValidationException(NO_MATCH)
        if value == "":
            what = "string" if kind == "S" else "binary"
            raise ValidationException(
                f"{empty_prefix}The AttributeValue for a key attribute cannot contain an empty {what} value. Key: {name}")
        return value

    def _check_sizes(self, h: str, r: str | None) -> None:
        if self.hash_type != "N" and len(raw_bytes(self.hash_type, h)) > MAX_HASH_BYTES:
            raise invalid(f"Size of hashkey has exceeded the maximum size limit of{MAX_HASH_BYTES} bytes")
        if r is not None and self.range_type != "N" and len(raw_bytes(self.range_type, r)) > MAX_RANGE_BYTES:  # type: ignore[arg-type]
            raise invalid(f"Aggregated size of all range keys has exceeded the size limit of {MAX_RANGE_BYTES} bytes")

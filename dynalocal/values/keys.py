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
from collections.abc import Callable
from dataclasses import dataclass, field

from dynalocal.errors import ValidationException, invalid
from dynalocal.values import numbers
from dynalocal.values.sizedcache import SizedCache

MAX_HASH_BYTES = 2048
MAX_RANGE_BYTES = 1024
TOKEN_BITS = 64
TOKEN_SPACE = 1 << TOKEN_BITS

NO_MATCH = "The provided key element does not match the schema"
INVALID = "One or more parameter values were invalid: "
PREFIX_CACHE_SIZE = 1 << 14  # partition prefixes remembered per key schema (cleared when full) ...
PREFIX_CACHE_BYTES = 1 << 21  # ... or when they hold about this many bytes (keys from requests can be 2 KB each)
ENTRY_OVERHEAD = 160  # bytes a cache entry costs beyond its key text and prefix (dict slot, object headers)
HASH_TOO_BIG = f"Size of hashkey has exceeded the maximum size limit of{MAX_HASH_BYTES} bytes"  # sic: "of2048"
RANGE_TOO_BIG = f"Aggregated size of all range keys has exceeded the size limit of {MAX_RANGE_BYTES} bytes"
# A key value this long (characters) or shorter cannot exceed the byte limits, in any type.
SHORT_HASH = MAX_HASH_BYTES // 4
SHORT_RANGE = MAX_RANGE_BYTES // 4
_blake2b = hashlib.blake2b
_LENGTHS = [n.to_bytes(2, "big") for n in range(MAX_HASH_BYTES)]  # the 2-byte length field, made once
TERM = b"\x00\x01"  # ends an escaped index sort value (storage/index.py's layout)
TERM_NEXT = b"\x00\x02"  # successor of any key ending in TERM, as a prefix


def escape(sort: bytes) -> bytes:
    """Order-preserving, prefix-free form of index sort bytes (without the terminator)."""
    return sort.replace(b"\x00", b"\x00\xff") if b"\x00" in sort else sort


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
    return _blake2b(pk_raw, digest_size=8).digest()


def prefix_successor(prefix: bytes) -> bytes | None:
    """The smallest byte string greater than every string starting with `prefix`."""
    trimmed = prefix.rstrip(b"\xff")
    if not trimmed:
        return None
    return trimmed[:-1] + bytes((trimmed[-1] + 1,))


def _raw_function(kind: str) -> Callable[[str], bytes]:
    """raw_bytes specialised to one key type (a valid N value is ASCII, so UTF-8 encodes it alike)."""
    return base64.b64decode if kind == "B" else str.encode


def _no_sort_key(value: str) -> bytes:
    raise TypeError("this key schema has no sort key")


def _sort_function(kind: str | None) -> Callable[[str], bytes]:
    """sort_bytes specialised to one key type."""
    if kind is None:
        return _no_sort_key
    if kind == "S":
        return str.encode  # UTF-8
    if kind == "N":
        return numbers.sort_bytes
    return base64.b64decode


@dataclass(frozen=True, slots=True)
class KeySchema:
    """A table's (or index's) key: attribute names and their scalar types."""

    hash_name: str
    hash_type: str
    range_name: str | None = None
    range_type: str | None = None
    names: tuple[str, ...] = field(init=False, repr=False, compare=False)
    name_set: frozenset[str] = field(init=False, repr=False, compare=False)
    range_kind: str = field(init=False, repr=False, compare=False)  # range_type, "" without a sort key
    _sort: Callable[[str], bytes] = field(init=False, repr=False, compare=False)
    _raw: Callable[[str], bytes] = field(init=False, repr=False, compare=False)
    _prefixes: SizedCache = field(init=False, repr=False, compare=False)  # hash value -> prefix

    def __post_init__(self) -> None:
        names = (self.hash_name,) if self.range_name is None else (self.hash_name, self.range_name)
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "name_set", frozenset(names))
        object.__setattr__(self, "range_kind", self.range_type or "")
        object.__setattr__(self, "_sort", _sort_function(self.range_type))
        object.__setattr__(self, "_raw", _raw_function(self.hash_type))
        object.__setattr__(self, "_prefixes", SizedCache())

    def partition_prefix(self, hash_value: str) -> bytes:
        """token | len | pk: the encoded-key prefix shared by all items of one partition key.

        Every key value from a request reaches storage through here or `encode`, so this is
        where an oversized one is refused (ValidationException), before any cache sees it."""
        prefix = self._prefixes.get(hash_value)
        return prefix if prefix is not None else self._remember(hash_value)

    def _prefix(self, hash_value: str) -> bytes:
        raw = self._raw(hash_value)
        if len(raw) > MAX_HASH_BYTES and self.hash_type != "N":
            raise invalid(HASH_TOO_BIG)
        n = len(raw)
        length = _LENGTHS[n] if n < MAX_HASH_BYTES else n.to_bytes(2, "big")
        return _blake2b(raw, digest_size=8).digest() + length + raw

    def sort_key(self, range_value: str) -> bytes:
        """Order-preserving bytes of a sort key value from a request, size-checked."""
        if len(range_value) > SHORT_RANGE:
            self._check_range(range_value)
        return self._sort(range_value)

    def _remember(self, hash_value: str) -> bytes:
        """The prefix, now cached: reads and updates of a partition key tend to repeat (writes of
        new items do not, so those paths only look the cache up)."""
        prefix = self._prefix(hash_value)
        self._prefixes.remember(hash_value, prefix, len(hash_value) + len(prefix) + ENTRY_OVERHEAD,
                                PREFIX_CACHE_SIZE, PREFIX_CACHE_BYTES)
        return prefix

    def encode(self, hash_value: str, range_value: str | None) -> bytes:
        """The encoded key of (size-checked) key values."""
        prefix = self._prefixes.get(hash_value) or self._prefix(hash_value)
        if range_value is None:  # None exactly when the schema has no sort key
            return prefix
        if len(range_value) > SHORT_RANGE:
            self._check_range(range_value)
        return prefix + self._sort(range_value)

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
        return self.check_item_parts(item)[0]

    def check_item_parts(self, item: dict) -> tuple[bytes, bytes]:
        """check_item, returning (encoded key, its partition prefix)."""
        av = item.get(self.hash_name)
        h = av.get(self.hash_type) if av is not None else None
        if not h:  # missing, mistyped or empty: the slow path raises the right error
            h = self._item_value(item, self.hash_name, self.hash_type)
        if self.range_name is None:  # _parts, inlined for the commonest key (one call less per write)
            if len(h) > SHORT_HASH:
                self._check_sizes(h, None)
            prefix = self._prefixes.get(h) or self._prefix(h)
            return prefix, prefix
        av = item.get(self.range_name)
        r = av.get(self.range_type) if av is not None else None
        if not r:
            r = self._item_value(item, self.range_name, self.range_kind)
        return self._parts(h, r, False)

    def check_key(self, key: dict, empty_prefix: str = INVALID) -> bytes:
        """Validate a request Key map (exactly the key attributes); return its encoded key."""
        return self.check_key_parts(key, empty_prefix)[0]

    def check_key_parts(self, key: dict, empty_prefix: str = INVALID) -> tuple[bytes, bytes]:
        """check_key, returning (encoded key, its partition prefix)."""
        if len(key) != len(self.names):
            raise ValidationException(NO_MATCH)
        av = key.get(self.hash_name)
        h = av.get(self.hash_type) if av is not None else None
        if not h:  # missing, mistyped or empty: the slow path raises the right error
            h = self._key_value(key, self.hash_name, self.hash_type, empty_prefix)
        r = None
        if self.range_name is not None:
            av = key.get(self.range_name)
            r = av.get(self.range_type) if av is not None else None
            if not r:
                r = self._key_value(key, self.range_name, self.range_kind, empty_prefix)
        return self._parts(h, r, True)

    def _parts(self, h: str, r: str | None, remember: bool) -> tuple[bytes, bytes]:
        """Size-check valid key values; return (encoded key, partition prefix)."""
        if len(h) > SHORT_HASH or (r is not None and len(r) > SHORT_RANGE):
            self._check_sizes(h, r)
        prefix = self._prefixes.get(h) or (self._remember(h) if remember else self._prefix(h))
        if r is None:
            return prefix, prefix
        return prefix + self._sort(r), prefix

    def fits(self, h: str, r: str | None) -> bool:
        """Whether key values are within DynamoDB's size limits (for stored items, which may
        hold index key values written before the index existed)."""
        try:
            self._check_sizes(h, r)
        except ValidationException:
            return False
        return True

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
                f"{empty_prefix}The AttributeValue for a key attribute cannot contain an empty {what} value. "
                f"Key: {name}")
        return value

    def _check_sizes(self, h: str, r: str | None) -> None:
        if self.hash_type != "N" and len(raw_bytes(self.hash_type, h)) > MAX_HASH_BYTES:
            raise invalid(HASH_TOO_BIG)
        if r is not None:
            self._check_range(r)

    def _check_range(self, r: str) -> None:
        if self.range_kind != "N" and len(raw_bytes(self.range_kind, r)) > MAX_RANGE_BYTES:
            raise invalid(RANGE_TOO_BIG)

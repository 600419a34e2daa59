"""Multi-attribute GSI keys: up to four HASH and four RANGE attributes (docs/behaviour/multikey-gsi.md).

Index store key layout (bytes, compared bytewise), the same shape as a single-attribute index's:

    token(8) | len(ipk)(2) | ipk | escaped(sort bytes of RANGE 1) + TERM | ... | table encoded key

ipk is every HASH value's raw bytes, escaped and terminated, so the token (the partition) is a
hash of the whole HASH tuple. Escaped, terminated sort values keep each element's own order and
are prefix-free, so the bytes sort element by element: the order of the RANGE tuple.
"""
from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field

from dynalocal.errors import ValidationException, invalid
from dynalocal.values.keys import (
    HASH_TOO_BIG,
    MAX_HASH_BYTES,
    MAX_RANGE_BYTES,
    RANGE_TOO_BIG,
    TERM,
    escape,
    raw_bytes,
    sort_bytes,
    token_of,
)

MAX_ELEMENTS = 4  # of each key type


@dataclass(frozen=True, slots=True)
class MultiKey:
    """A GSI key of several attributes: (name, type) of each HASH and RANGE element, in KeySchema order."""

    hash_attrs: tuple[tuple[str, str], ...]
    range_attrs: tuple[tuple[str, str], ...]
    names: tuple[str, ...] = field(init=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "names", tuple(n for n, _ in self.hash_attrs + self.range_attrs))

    @staticmethod
    def of(elements: list[dict], types: dict[str, str]) -> MultiKey | None:
        """The MultiKey of a wire KeySchema, or None when one HASH and at most one RANGE suffice."""
        hashes = tuple((e["AttributeName"], types[e["AttributeName"]]) for e in elements if e["KeyType"] == "HASH")
        ranges = tuple((e["AttributeName"], types[e["AttributeName"]]) for e in elements if e["KeyType"] == "RANGE")
        if len(hashes) == 1 and len(ranges) <= 1:
            return None
        return MultiKey(hashes, ranges)

    def partition_prefix(self, values: Sequence[str]) -> bytes:
        """token | len | ipk of the HASH values (in KeySchema order), size-checked."""
        parts = []
        for (_, kind), value in zip(self.hash_attrs, values, strict=True):
            raw = raw_bytes(kind, value)
            if len(raw) > MAX_HASH_BYTES and kind != "N":
                raise invalid(HASH_TOO_BIG)
            parts.append(escape(raw) + TERM)
        ipk = b"".join(parts)
        return token_of(ipk) + len(ipk).to_bytes(2, "big") + ipk

    def sort_of(self, position: int, value: str) -> bytes:
        """Sort bytes of one RANGE value (size-checked), not yet escaped."""
        kind = self.range_attrs[position][1]
        if kind != "N" and len(raw_bytes(kind, value)) > MAX_RANGE_BYTES:
            raise invalid(RANGE_TOO_BIG)
        return sort_bytes(kind, value)

    def sort_prefix(self, values: Sequence[str]) -> bytes:
        """The escaped, terminated sort bytes of the leading RANGE values."""
        return b"".join(escape(self.sort_of(i, v)) + TERM for i, v in enumerate(values))

    def values_of(self, item: dict) -> tuple[list[str], list[str]] | None:
        """(HASH values, RANGE values) of an item, or None unless it has every key attribute typed right."""
        hashes = []
        for name, kind in self.hash_attrs:
            av = item.get(name)
            value = av.get(kind) if av is not None else None
            if not value:
                return None
            hashes.append(value)
        ranges = []
        for name, kind in self.range_attrs:
            av = item.get(name)
            value = av.get(kind) if av is not None else None
            if not value:
                return None
            ranges.append(value)
        return hashes, ranges

    def store_key(self, item: dict, table_key: bytes) -> bytes | None:
        """The index entry key of an item, or None when it is not in the index (sparse, or oversized)."""
        values = self.values_of(item)
        if values is None:
            return None
        try:
            return self.partition_prefix(values[0]) + self.sort_prefix(values[1]) + table_key
        except ValidationException:  # an oversized key stored before the index existed
            return None

    @property
    def hash_kind(self) -> str:
        """The types of the HASH tuple as `show_tuple` reads them, e.g. "(S,N)"."""
        return "(" + ",".join(kind for _, kind in self.hash_attrs) + ")"


def show_tuple(kinds: str, pk_prefix: bytes) -> str:
    """The HASH tuple of a partition prefix token(8)|len(2)|ipk as text, e.g. "(US, 98101)" (B in base64);
    `kinds` is MultiKey.hash_kind."""
    out = []
    rest = pk_prefix[10:]
    for kind in kinds.strip("()").split(","):
        end = rest.find(TERM)  # escaped values hold no TERM: each 0x00 of a value is followed by 0xFF
        end = len(rest) if end < 0 else end
        raw = rest[:end].replace(b"\x00\xff", b"\x00")
        rest = rest[end + 2:]
        out.append(base64.b64encode(raw).decode() if kind == "B" else raw.decode("utf-8", "replace"))
    return "(" + ", ".join(out) + ")"


__all__ = ["MultiKey", "MAX_ELEMENTS", "show_tuple"]

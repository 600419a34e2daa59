"""values.multikey: the store-key encoding of multi-attribute GSI keys (docs/behaviour/multikey-gsi.md §2)."""
from __future__ import annotations

import base64

import pytest

from dynalocal.errors import ValidationException
from dynalocal.values.multikey import MultiKey, show_tuple

KEY = MultiKey((("h", "S"), ("n", "N")), (("r", "S"), ("m", "N"), ("b", "B")))


def _item(h="x", n="1", r="a", m="0", b=b"\x00"):
    return {"h": {"S": h}, "n": {"N": n}, "r": {"S": r}, "m": {"N": m}, "b": {"B": base64.b64encode(b).decode()}}


def test_of_keeps_one_hash_and_one_range_single():
    types = {"a": "S", "b": "N", "c": "S"}
    assert MultiKey.of([{"AttributeName": "a", "KeyType": "HASH"}, {"AttributeName": "b", "KeyType": "RANGE"}],
                       types) is None
    key = MultiKey.of([{"AttributeName": "a", "KeyType": "HASH"}, {"AttributeName": "b", "KeyType": "RANGE"},
                       {"AttributeName": "c", "KeyType": "RANGE"}], types)
    assert key is not None and key.names == ("a", "b", "c") and key.hash_kind == "(S)"


def test_sparse_and_partition_of_the_whole_hash_tuple():
    assert KEY.store_key({k: v for k, v in _item().items() if k != "m"}, b"t") is None
    assert KEY.store_key({**_item(), "m": {"S": "1"}}, b"t") is None  # wrong type: not indexed
    one, other = KEY.store_key(_item(), b"t"), KEY.store_key(_item(n="2"), b"t")
    assert one is not None and other is not None and one[:8] != other[:8]  # a different token


def test_range_tuple_order_is_element_by_element_by_type():
    rows = [("a", "10", b"\x01"), ("a", "9", b"\xff"), ("a", "-1", b"\x05"), ("a", "9", b"\x00\x01"),
            ("ab", "-5", b"\x05"), ("a\x00", "0", b"\x05"), ("b", "0", b"\x05"), ("a", "9", b"\x00")]
    keys = {KEY.store_key(_item(r=r, m=m, b=b), b"t"): (r.encode(), float(m), b) for r, m, b in rows}
    assert [keys[k] for k in sorted(keys)] == sorted(keys.values())


def test_sizes_and_display():
    with pytest.raises(ValidationException):
        KEY.partition_prefix(["x" * 2049, "1"])
    with pytest.raises(ValidationException):
        KEY.sort_prefix(["x" * 1025])
    assert KEY.store_key(_item(r="x" * 1025), b"t") is None  # an oversized key stored earlier: not indexed
    assert show_tuple(KEY.hash_kind, KEY.partition_prefix(["US\x00x", "98101"])) == "(US\x00x, 98101)"

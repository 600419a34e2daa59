"""Primary keys: validation messages, size limits and the order of encoded keys."""
from __future__ import annotations

import base64
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.errors import ValidationException
from dynalocal.values import keys, numbers
from dynalocal.values.keys import KeySchema

NO_MATCH = "The provided key element does not match the schema"
INVALID = "One or more parameter values were invalid: "

HASH_ONLY = KeySchema("pk", "S")
COMPOSITE = KeySchema("pk", "S", "sk", "N")
BINARY = KeySchema("pk", "B", "sk", "B")


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode()


def key_error(schema: KeySchema, key: dict, **kw) -> str:
    with pytest.raises(ValidationException) as info:
        schema.check_key(key, **kw)
    return info.value.message


def item_error(schema: KeySchema, item: dict) -> str:
    with pytest.raises(ValidationException) as info:
        schema.check_item(item)
    return info.value.message


# --- Key maps (GetItem, DeleteItem, UpdateItem) ---------------------------------------------

@pytest.mark.parametrize("schema,key", [
    (HASH_ONLY, {}),
    (HASH_ONLY, {"other": {"S": "a"}}),
    (HASH_ONLY, {"pk": {"N": "1"}}),
    (HASH_ONLY, {"pk": {"S": "a"}, "extra": {"S": "b"}}),
    (COMPOSITE, {"pk": {"S": "a"}}),
    (COMPOSITE, {"sk": {"N": "1"}}),
    (COMPOSITE, {"pk": {"S": "a"}, "sk": {"S": "1"}}),
    (COMPOSITE, {"pk": {"S": "a"}, "other": {"N": "1"}}),
    (COMPOSITE, {"pk": {"S": "a"}, "sk": {"N": "1"}, "x": {"N": "1"}}),
])
def test_key_does_not_match_schema(schema, key):
    assert key_error(schema, key) == NO_MATCH


def test_empty_key_values():
    assert key_error(HASH_ONLY, {"pk": {"S": ""}}) == (
        INVALID + "The AttributeValue for a key attribute cannot contain an empty string value. Key: pk")
    assert key_error(BINARY, {"pk": {"B": "AQ=="}, "sk": {"B": ""}}, empty_prefix="One or more parameter values are not valid. ") == (
        "One or more parameter values are not valid. "
        "The AttributeValue for a key attribute cannot contain an empty binary value. Key: sk")


def test_valid_keys_encode_like_items():
    item = {"pk": {"S": "a"}, "sk": {"N": "5"}, "x": {"S": "y"}}
    assert COMPOSITE.check_key({"pk": {"S": "a"}, "sk": {"N": "5"}}) == COMPOSITE.check_item(item)
    assert COMPOSITE.encode_item(item) == COMPOSITE.check_item(item)
    assert COMPOSITE.key_of(item) == {"pk": {"S": "a"}, "sk": {"N": "5"}}
    assert HASH_ONLY.key_of(item) == {"pk": {"S": "a"}}
    assert COMPOSITE.names == ("pk", "sk") and HASH_ONLY.names == ("pk",)


# --- Items (PutItem) -----------------------------------------------------------------------

def test_item_missing_key_attribute():
    assert item_error(HASH_ONLY, {"x": {"S": "a"}}) == INVALID + "Missing the key pk in the item"
    assert item_error(COMPOSITE, {"pk": {"S": "a"}}) == INVALID + "Missing the key sk in the item"


def test_item_key_type_mismatch():
    assert item_error(HASH_ONLY, {"pk": {"N": "1"}}) == INVALID + "Type mismatch for key pk expected: S actual: N"
    assert item_error(COMPOSITE, {"pk": {"S": "a"}, "sk": {"SS": ["1"]}}) == (
        INVALID + "Type mismatch for key sk expected: N actual: SS")


def test_item_empty_key_values():
    assert item_error(HASH_ONLY, {"pk": {"S": ""}}) == (
        "One or more parameter values are not valid. "
        "The AttributeValue for a key attribute cannot contain an empty string value. Key: pk")
    assert item_error(BINARY, {"pk": {"B": ""}, "sk": {"B": "AQ=="}}) == (
        "One or more parameter values are not valid. "
        "The AttributeValue for a key attribute cannot contain an empty binary value. Key: pk")


# --- Sizes ---------------------------------------------------------------------------------

HASH_TOO_BIG = INVALID + "Size of hashkey has exceeded the maximum size limit of2048 bytes"
RANGE_TOO_BIG = INVALID + "Aggregated size of all range keys has exceeded the size limit of 1024 bytes"


def test_hash_key_size_limit():
    HASH_ONLY.check_item({"pk": {"S": "x" * 2048}})
    HASH_ONLY.check_key({"pk": {"S": "é" * 1024}})  # 2048 UTF-8 bytes
    assert item_error(HASH_ONLY, {"pk": {"S": "x" * 2049}}) == HASH_TOO_BIG
    assert key_error(HASH_ONLY, {"pk": {"S": "é" * 1024 + "x"}}) == HASH_TOO_BIG
    BINARY.check_key({"pk": {"B": b64(b"\x01" * 2048)}, "sk": {"B": "AQ=="}})
    assert key_error(BINARY, {"pk": {"B": b64(b"\x01" * 2049)}, "sk": {"B": "AQ=="}}) == HASH_TOO_BIG


def test_range_key_size_limit():
    schema = KeySchema("pk", "S", "sk", "S")
    schema.check_item({"pk": {"S": "a"}, "sk": {"S": "x" * 1024}})
    assert item_error(schema, {"pk": {"S": "a"}, "sk": {"S": "x" * 1025}}) == RANGE_TOO_BIG
    assert key_error(schema, {"pk": {"S": "a"}, "sk": {"S": "x" * 1025}}) == RANGE_TOO_BIG
    BINARY.check_item({"pk": {"B": "AQ=="}, "sk": {"B": b64(b"\x00" * 1024)}})
    assert item_error(BINARY, {"pk": {"B": "AQ=="}, "sk": {"B": b64(b"\x00" * 1025)}}) == RANGE_TOO_BIG


def test_number_keys_are_not_size_checked():
    long_number = numbers.canonical("1e125")  # the largest magnitude: 126 digits of canonical text
    schema = KeySchema("pk", "N", "sk", "N")
    key = schema.check_item({"pk": {"N": long_number}, "sk": {"N": long_number}})
    assert key == schema.encode(long_number, long_number)


# --- Order ---------------------------------------------------------------------------------

def sort_key_order(schema: KeySchema, kind: str, vals: list[str]) -> list[str]:
    """Values in the order their encoded keys (same partition key) sort."""
    encoded = {schema.encode("p", v): v for v in vals}
    return [encoded[k] for k in sorted(encoded)]


def test_numbers_sort_numerically():
    schema = KeySchema("pk", "S", "sk", "N")
    vals = [numbers.canonical(v) for v in ["10", "9", "-1", "0", "1e3", "-0.5", "2.5", "-100", "0.001"]]
    assert sort_key_order(schema, "N", vals) == sorted(vals, key=Decimal)


def test_strings_sort_by_utf8_bytes():
    schema = KeySchema("pk", "S", "sk", "S")
    vals = ["a", "A", "z", "¿", "ab", "aa", "b", "\U0001F600", "\uffff", "Z", "a\x00"]
    assert sort_key_order(schema, "S", vals) == sorted(vals, key=lambda s: s.encode("utf-8"))
    assert sort_key_order(schema, "S", ["¿", "z"]) == ["z", "¿"]


def test_binary_sorts_unsigned():
    raws = [b"\x00", b"\xff", b"\x7f", b"\x80", b"\x00\x00", b"\x01", b"\xff\x00"]
    vals = [b64(r) for r in raws]
    got = sort_key_order(KeySchema("pk", "S", "sk", "B"), "B", vals)
    assert [base64.b64decode(v) for v in got] == sorted(raws)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.decimals(min_value=-10**20, max_value=10**20, allow_nan=False, places=10), min_size=1, max_size=20,
                unique=True))
def test_number_sort_keys_property(decimals):
    texts = [numbers.canonical(str(d)) for d in decimals]
    texts = list(dict.fromkeys(texts))
    schema = KeySchema("pk", "S", "sk", "N")
    assert sort_key_order(schema, "N", texts) == sorted(texts, key=Decimal)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=20, unique=True))
def test_string_sort_keys_property(strings):
    schema = KeySchema("pk", "S", "sk", "S")
    assert sort_key_order(schema, "S", strings) == sorted(strings, key=lambda s: s.encode("utf-8"))


def test_items_of_one_partition_key_are_contiguous():
    schema = KeySchema("pk", "S", "sk", "N")
    encoded = sorted((schema.encode(pk, str(sk)), pk) for pk in ("a", "b", "c", "d") for sk in range(20))
    seen: list[str] = []
    for _, pk in encoded:
        if not seen or seen[-1] != pk:
            assert pk not in seen
            seen.append(pk)
    prefix = schema.partition_prefix("b")
    assert all(k.startswith(prefix) == (pk == "b") for k, pk in encoded)


def test_token_is_stable_and_8_bytes():
    assert keys.token_of(b"abc") == keys.token_of(b"abc")
    assert len(keys.token_of(b"abc")) == 8
    assert HASH_ONLY.encode("abc", None)[:8] == keys.token_of(b"abc")
    # a number partition key hashes its canonical text, so 1, 1.0 and 1e0 are one item
    schema = KeySchema("pk", "N")
    assert schema.encode(numbers.canonical("1.0"), None) == schema.encode(numbers.canonical("1e0"), None)


def test_prefix_successor():
    assert keys.prefix_successor(b"ab") == b"ac"
    assert keys.prefix_successor(b"a\xff") == b"b"
    assert keys.prefix_successor(b"\xff\xff") is None
    for prefix in (b"a", b"a\xfe", b"\x00\xff"):
        succ = keys.prefix_successor(prefix)
        assert succ > prefix + b"\xff" * 10

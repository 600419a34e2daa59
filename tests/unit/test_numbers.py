"""Numbers: grammar, canonical output, 38 digits, range, size, order-preserving bytes."""
from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynalocal.errors import ValidationException
from dynalocal.values import numbers

OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
TOO_PRECISE = "Attempting to store more than 38 significant digits in a Number"


def error_of(text: str) -> str:
    with pytest.raises(ValidationException) as info:
        numbers.canonical(text)
    return info.value.message


# docs/behaviour/values.md §1: canonical output, one case per documented example.
CANONICAL = [
    ("007", "7"), ("001.23", "1.23"), ("+3", "3"), ("1.0", "1"), ("1.00", "1"), ("1.10", "1.1"),
    ("100.000", "100"), (".5", "0.5"), ("-.5", "-0.5"), ("1e3", "1000"), ("1E+3", "1000"),
    ("1.23e4", "12300"), ("1e-3", "0.001"), ("123e-2", "1.23"), ("1.0e-1", "0.1"),
    ("-0", "0"), ("-0.0", "0"), ("0e5", "0"), ("0.0e3", "0"),
    ("1e20", "100000000000000000000"), ("1e-20", "0.00000000000000000001"),
    ("1e125", "1" + "0" * 125),
    # and a few more spellings
    ("0", "0"), ("00", "0"), ("5.", "5"), ("-5.", "-5"), ("-007.50", "-7.5"), ("1E-0", "1"),
    ("12345678901234567890123456789012345678", "12345678901234567890123456789012345678"),
    ("1e-130", "0." + "0" * 129 + "1"), ("-1e-130", "-0." + "0" * 129 + "1"),
    ("9.9999999999999999999999999999999999999E+125", "99999999999999999999999999999999999999" + "0" * 88),
]


@pytest.mark.parametrize("text,expected", CANONICAL)
def test_canonical_form(text, expected):
    assert numbers.canonical(text) == expected
    # canonical text is a fixed point
    assert numbers.canonical(expected) == expected


@pytest.mark.parametrize("text", ["NaN", "Infinity", "-Infinity", "dog", " 1", "1 ", "1e", "e1", ".", "+", "-",
                                  "1.2.3", "0x10", "1_000", "1e+-1", "1e1.5", "--1", "\u0663", "1\u0663", "１"])
def test_not_a_number(text):
    assert error_of(text) == f"The parameter cannot be converted to a numeric value: {text}"


def test_empty_string_is_not_a_number():
    assert error_of("") == "The parameter cannot be converted to a numeric value"


def test_38_significant_digits():
    assert numbers.canonical("9" * 38) == "9" * 38
    assert error_of("9" * 39) == TOO_PRECISE
    assert error_of("1." + "1" * 38) == TOO_PRECISE
    assert error_of("-0.000" + "1" * 39) == TOO_PRECISE
    # Leading and trailing zeros are not significant.
    assert numbers.canonical("000" + "1" * 38 + "000") == "1" * 38 + "000"
    assert numbers.canonical("0.00" + "1" * 38) == "0.00" + "1" * 38
    assert numbers.canonical("1" * 38 + "0" * 50) == "1" * 38 + "0" * 50


@pytest.mark.parametrize("text", ["1e126", "-1e126", "10e125", "9.99e126", "1" + "0" * 126,
                                  "1e9999999999999999999999", "-1E+99999999999999999999999"])
def test_overflow(text):
    assert error_of(text) == OVERFLOW


@pytest.mark.parametrize("text", ["1e-131", "-1e-131", "0.9e-130", "0." + "0" * 130 + "1",
                                  "1e-9999999999999999999999", "-5e-99999999999999999999999"])
def test_underflow(text):
    assert error_of(text) == UNDERFLOW


@pytest.mark.parametrize("text", ["9.9999999999999999999999999999999999999e125", "-9.9999999999999999999999999999999999999e125",
                                  "1e-130", "-1e-130", "1e125", "0.1e126", "100e-132"])
def test_range_boundaries_accepted(text):
    assert Decimal(numbers.canonical(text)) == Decimal(text)


@pytest.mark.parametrize("text", ["0e126", "0e-131", "0.0e126", "-0e99999999999999999999999", "000.000e-5"])
def test_any_spelling_of_zero_is_zero(text):
    assert numbers.canonical(text) == "0"


def test_arithmetic_is_exact_and_checked():
    assert numbers.add("0.1", "0.2") == "0.3"
    assert numbers.add("9e125", "9e124") == "99" + "0" * 124
    assert numbers.subtract("1", "1.5") == "-0.5"
    assert numbers.subtract("5", "5") == "0"
    assert numbers.add("1e-130", "-1e-130") == "0"
    # DynamoDB reports precision loss in arithmetic with the overflow message.
    with pytest.raises(ValidationException) as info:
        numbers.add("1e50", "1")
    assert info.value.message == OVERFLOW
    with pytest.raises(ValidationException) as info:
        numbers.add("9.9e125", "1e125")
    assert info.value.message == OVERFLOW


def test_compare():
    assert numbers.compare("1", "1") == 0
    assert numbers.compare("-1", "1") == -1
    assert numbers.compare("10", "9") == 1
    assert numbers.compare("0.001", "0.01") == -1


def reference_size(text: str) -> int:
    """Independent size: 1 exponent byte + base-100 digits aligned to even powers of ten (+1 if negative)."""
    d = Decimal(text)
    if d == 0:
        return 1
    sign, digits, exp = d.as_tuple()
    s = "".join(map(str, digits)).rstrip("0")
    trailing = len("".join(map(str, digits))) - len(s)
    s = s.lstrip("0")
    low = exp + trailing  # power of ten of the last significant digit
    high = low + len(s) - 1  # power of ten of the first
    return 1 + (high // 2 - low // 2 + 1) + (1 if sign else 0)


@pytest.mark.parametrize("text,size", [
    ("0", 1), ("1", 2), ("-1", 3), ("10", 2), ("12", 2), ("123", 3), ("1234", 3), ("12345", 4),
    ("1.2", 3), ("12.3", 3), ("0.1", 2), ("0.01", 2), ("0.12", 2), ("0.012", 3), ("100", 2), ("1000", 2),
    ("99" * 19, 20), ("9" * 38, 20), ("-" + "9" * 38, 21),
])
def test_size(text, size):
    assert numbers.size(text) == size
    assert reference_size(text) == size


# Numbers DynamoDB can store: up to 38 significant digits, adjusted exponent -130..125.
stored = st.builds(
    lambda sign, digits, exp: Decimal((sign, tuple(int(c) for c in str(digits)), exp - len(str(digits)) + 1)),
    st.integers(0, 1), st.integers(1, 10**38 - 1), st.integers(-130, 125),
) | st.just(Decimal(0)) | st.decimals(min_value=-10**6, max_value=10**6, places=4, allow_nan=False)


def spellings(d: Decimal) -> list[str]:
    return [str(d), format(d, "f"), format(d, "e"), format(d, "E")]


@settings(max_examples=300, deadline=None)
@given(stored)
def test_canonical_keeps_the_value(d):
    for text in spellings(d):
        out = numbers.canonical(text)
        assert Decimal(out) == d
        assert "e" not in out and "E" not in out and not out.startswith("+")
        assert out == numbers.canonical(out)


@settings(max_examples=300, deadline=None)
@given(stored)
def test_size_matches_reference(d):
    text = numbers.canonical(str(d))
    assert numbers.size(text) == reference_size(text)


@pytest.mark.parametrize("ordered", [
    ["-1e125", "-100", "-10", "-9.99", "-1.01", "-1", "-0.5", "-0.1", "-1e-130", "0", "1e-130", "0.1", "0.5", "1",
     "1.01", "9.99", "10", "100", "1e125"],
    ["-12", "-11.99", "-11.9", "-11", "-1.2", "-1.19", "-1.1", "1.1", "1.19", "1.2", "11", "11.9", "11.99", "12"],
])
def test_sort_bytes_order(ordered):
    encoded = [numbers.sort_bytes(numbers.canonical(t)) for t in ordered]
    assert encoded == sorted(encoded)
    assert len(set(encoded)) == len(encoded)


@settings(max_examples=500, deadline=None)
@given(stored, stored)
def test_sort_bytes_order_matches_decimal(a, b):
    ca, cb = numbers.canonical(str(a)), numbers.canonical(str(b))
    ka, kb = numbers.sort_bytes(ca), numbers.sort_bytes(cb)
    assert (ka < kb) == (a < b)
    assert (ka == kb) == (a == b)
    assert numbers.compare(ca, cb) == (a > b) - (a < b)


@settings(max_examples=200, deadline=None)
@given(st.lists(stored, min_size=2, max_size=30))
def test_sort_bytes_sorts_lists_like_decimal(values):
    texts = [numbers.canonical(str(v)) for v in values]
    assert sorted(texts, key=numbers.sort_bytes) == sorted(texts, key=Decimal)

"""DynamoDB numbers: validation, canonical text, exact arithmetic, size, order-preserving bytes.

A number travels as text. `canonical()` validates it (38 significant digits, magnitude
1E-130 .. <1E126) and returns DynamoDB's output form: plain decimal, no exponent, no
redundant zeros, no '+', '-0' -> '0'. Everything stored is canonical, so equal numbers
have equal text and hashing/equality on text is numeric equality.
"""
from __future__ import annotations

import decimal
import re
from decimal import Decimal

from dynalocal.errors import ValidationException

MAX_DIGITS = 38
MIN_EXP = -130  # adjusted exponent of the smallest magnitude, 1E-130
MAX_EXP = 125  # adjusted exponent of the largest magnitude, 9.99..E125

# ASCII digits only: `\d` (and Decimal) would also accept other scripts' digits, e.g. '\u0663'.
_GRAMMAR = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
# Enough precision that sums/differences of two in-range 38-digit numbers are exact.
_CTX = decimal.Context(prec=400, Emax=999999, Emin=-999999)

OVERFLOW = "Number overflow. Attempting to store a number with magnitude larger than supported range"
UNDERFLOW = "Number underflow. Attempting to store a number with magnitude smaller than supported range"
TOO_PRECISE = "Attempting to store more than 38 significant digits in a Number"


def not_numeric(text: str) -> ValidationException:
    if text == "":
        return ValidationException("The parameter cannot be converted to a numeric value")
    return ValidationException(f"The parameter cannot be converted to a numeric value: {text}")


def _digits(d: Decimal) -> tuple[int, str, int]:
    """(sign, significant digits without leading/trailing zeros, exponent of the last digit)."""
    sign, digits, exp = d.as_tuple()
    assert isinstance(exp, int)  # finite: NaN and Infinity never get here
    text = "".join(map(str, digits)).lstrip("0")
    if not text:
        return 0, "", 0
    stripped = text.rstrip("0")
    return sign, stripped, exp + (len(text) - len(stripped))


def _format(sign: int, digits: str, exp: int) -> str:
    if not digits:
        return "0"
    if exp >= 0:
        out = digits + "0" * exp
    else:
        point = len(digits) + exp
        out = digits[:point] + "." + digits[point:] if point > 0 else "0." + "0" * -point + digits
    return "-" + out if sign else out


def _check(sign: int, digits: str, exp: int, precision_error: str = TOO_PRECISE) -> None:
    if not digits:
        return
    if len(digits) > MAX_DIGITS:
        raise ValidationException(precision_error)
    adjusted = exp + len(digits) - 1
    if adjusted > MAX_EXP:
        raise ValidationException(OVERFLOW)
    if adjusted < MIN_EXP:
        raise ValidationException(UNDERFLOW)


def canonical(text: str) -> str:
    """Validate a number's text and return its canonical form (raises ValidationException)."""
    # Fast path: plain integers are already canonical.
    if text.isascii() and text.isdigit() and (text[0] != "0" or text == "0") and len(text) <= MAX_DIGITS:
        return text
    if not isinstance(text, str) or not _GRAMMAR.fullmatch(text):
        raise not_numeric(text if isinstance(text, str) else str(text))
    try:
        value = Decimal(text)
    except decimal.InvalidOperation:  # exponent beyond Decimal's own range (about 1E+-10**18)
        mantissa, _, exponent = text.lower().partition("e")
        if not mantissa.strip("+-.0"):
            return "0"
        raise ValidationException(UNDERFLOW if exponent.startswith("-") else OVERFLOW) from None
    sign, digits, exp = _digits(value)
    _check(sign, digits, exp)
    return _format(sign, digits, exp)


def from_decimal(d: Decimal) -> str:
    """Canonical text of an arithmetic result; out-of-range or over-precise results are errors.

    DynamoDB reports precision loss in arithmetic with the overflow message.
    """
    sign, digits, exp = _digits(d)
    _check(sign, digits, exp, precision_error=OVERFLOW)
    return _format(sign, digits, exp)


def add(a: str, b: str) -> str:
    return from_decimal(_CTX.add(Decimal(a), Decimal(b)))


def subtract(a: str, b: str) -> str:
    return from_decimal(_CTX.subtract(Decimal(a), Decimal(b)))


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 comparing two canonical numbers by value."""
    if a == b:
        return 0
    da, db = Decimal(a), Decimal(b)
    return -1 if da < db else 1


def size(text: str) -> int:
    """Bytes a canonical number counts toward item size (base-100 digit pairs plus exponent)."""
    if text == "0":
        return 1
    negative = text[0] == "-"
    body = text[1:] if negative else text
    if "." not in body:  # an integer: the general case below with frac = ""
        digits = body.strip("0")
        k = len(digits)
        e = len(body) - 1 if digits else -1
        return 1 + (k + 1) // 2 + (1 if k % 2 == 0 and e % 2 == 0 else 0) + (1 if negative else 0)
    whole, frac = body.split(".")
    all_digits = (whole + frac).lstrip("0")
    k = len(all_digits.rstrip("0"))
    # adjusted exponent: position of the leading significant digit
    e = len(whole) - 1 if whole.strip("0") else -(len(frac) - len(frac.lstrip("0")) + 1)
    pairs = (k + 1) // 2 + (1 if k % 2 == 0 and e % 2 == 0 else 0)
    return 1 + pairs + (1 if negative else 0)


def sort_bytes(text: str) -> bytes:
    """Order-preserving bytes of a canonical number: byte order equals numeric order."""
    if text == "0":
        return b"\x01"
    sign, digits, exp = _digits(Decimal(text))
    adjusted = exp + len(digits) - 1 - MIN_EXP  # 0..255
    if not sign:
        return b"\x02" + bytes((adjusted,)) + digits.encode()
    inverted = digits.translate(_INVERT).encode()
    return b"\x00" + bytes((255 - adjusted,)) + inverted + b"\xff"


_INVERT = str.maketrans("0123456789", "9876543210")

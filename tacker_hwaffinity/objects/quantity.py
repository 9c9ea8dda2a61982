"""Kubernetes resource quantities ("100m", "1.5Gi", "2e3") as exact fractions."""
import functools
import math
import re
from fractions import Fraction
from typing import Any

_BINARY: dict[str, int] = {"Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
           "Pi": 2 ** 50, "Ei": 2 ** 60}
_DECIMAL: dict[str, Fraction | int] = {"n": Fraction(1, 10 ** 9), "u": Fraction(1, 10 ** 6),
            "m": Fraction(1, 1000), "": 1, "k": 10 ** 3, "M": 10 ** 6,
            "G": 10 ** 9, "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18}
_QUANTITY = re.compile(
    r"^([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))"
    r"(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?[0-9]+|n|u|m|k|M|G|T|P|E|)$")


def parse_quantity(value: Any) -> Fraction:
    """Parse a quantity into a Fraction; raise ValueError with a reason."""
    if isinstance(value, bool):
        raise ValueError("expected a quantity such as 500m or 2Gi, got a boolean")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError("expected a finite quantity")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise ValueError("expected a quantity such as 500m or 2Gi")
    return _parse_text(value)


@functools.lru_cache(maxsize=4096)
def _parse_text(value: str) -> Fraction:
    """A cluster repeats a few quantity strings thousands of times (every
    node's "4", "32Gi", "110"); Fractions are immutable, so one parse serves
    them all. Errors are not cached (the exception propagates)."""
    m = _QUANTITY.match(value.strip())
    if not m:
        raise ValueError("%r is not a quantity (expected e.g. 500m, 1.5, 2Gi)" % value)
    number, suffix = Fraction(m.group(1)), m.group(2)
    if suffix in _BINARY:
        return number * _BINARY[suffix]
    if suffix[:1] in ("e", "E"):
        exp = int(suffix[1:])
        if abs(exp) > 64:
            raise ValueError("%r: exponent out of range" % value)
        return number * Fraction(10) ** exp
    return number * _DECIMAL[suffix]


def milli_value(q: Fraction) -> int:
    """The quantity in thousandths, rounded up (Quantity.MilliValue)."""
    return math.ceil(q * 1000)


def value(q: Fraction) -> int:
    """The quantity as an integer, rounded up (Quantity.Value)."""
    return math.ceil(q)

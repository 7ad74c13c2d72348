"""Exact float32 arithmetic on Python floats.

Every float32 value is exactly a Python float (binary64), so the model keeps
values as Python floats and computes each operation exactly with Fractions,
then rounds once to float32 (round to nearest, ties to even; IEEE overflow to
Inf; gradual underflow) — what a correctly rounded float32 unit does.
"""

from __future__ import annotations

import math
import struct
from fractions import Fraction

from .._dyadic import floor_log2 as _floor_log2

__all__ = ["F32_MAX", "add", "bits32", "div", "f32", "from_bits32", "is_f32", "mul", "sub"]

_MANT = 23
_EMIN = -126
F32_MAX = float((2 - Fraction(1, 1 << 23)) * (Fraction(2) ** 127))


def f32(v: Fraction | float | int, negative_zero: bool = False) -> float:
    """Round an exact value to float32 (RNE, overflow to +-Inf).

    Args:
        v: the exact value (NaN and +-Inf floats pass through).
        negative_zero: the sign to give an exact zero result.

    Returns:
        The float32 value as a Python float.
    """
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return v
        if v == 0:
            return math.copysign(0.0, v)
        v = Fraction(v)
    v = Fraction(v)
    if v == 0:
        return -0.0 if negative_zero else 0.0
    sign = -1.0 if v < 0 else 1.0
    a = abs(v)
    e = max(_floor_log2(a), _EMIN)
    ulp = Fraction(2) ** (e - _MANT)
    q = a / ulp
    n = q.numerator // q.denominator
    rest = q - n
    if rest > Fraction(1, 2) or (rest == Fraction(1, 2) and n % 2 == 1):
        n += 1
    r = n * ulp
    if r > Fraction(F32_MAX):
        return sign * math.inf
    return math.copysign(float(r), sign)


def is_f32(x: float) -> bool:
    """True when the Python float ``x`` is a float32 value (NaN and Inf included)."""
    return math.isnan(x) or f32(x) == x


def bits32(x: float) -> int:
    """The float32 bit pattern of a float32 value (canonical quiet NaN for NaN, with sign)."""
    if math.isnan(x):
        return 0xFFC00000 if math.copysign(1.0, x) < 0 else 0x7FC00000
    return struct.unpack("<I", struct.pack("<f", x))[0]


def from_bits32(b: int) -> float:
    """The value of a float32 bit pattern."""
    return struct.unpack("<f", struct.pack("<I", b & 0xFFFFFFFF))[0]


def _special(a: float, b: float, op) -> float | None:
    if math.isfinite(a) and math.isfinite(b):
        return None
    if math.isnan(a) or math.isnan(b):
        return a if math.isnan(a) else b
    with_inf = op(a, b)  # binary64 gives the IEEE special result exactly
    # an invalid operation (0 * Inf, Inf - Inf) gives +NaN (SEMANTICS.md §7, §8), not the
    # processor's default NaN (negative on x86)
    return math.nan if math.isnan(with_inf) else with_inf


def mul(a: float, b: float) -> float:
    """float32 product of two float32 values."""
    s = _special(a, b, lambda x, y: x * y)
    if s is not None:
        return s
    neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
    return f32(Fraction(a) * Fraction(b), negative_zero=neg)


def div(a: float, b: float) -> float:
    """float32 quotient of two float32 values (IEEE: x/0 is +-Inf, 0/0 is NaN)."""
    if math.isnan(a) or math.isnan(b):
        return math.nan
    neg = (math.copysign(1.0, a) < 0) != (math.copysign(1.0, b) < 0)
    if b == 0:
        return math.nan if a == 0 else (-math.inf if neg else math.inf)
    if math.isinf(a):
        return math.nan if math.isinf(b) else (-math.inf if neg else math.inf)
    if math.isinf(b):
        return -0.0 if neg else 0.0
    return f32(Fraction(a) / Fraction(b), negative_zero=neg)


def add(a: float, b: float) -> float:
    """float32 sum of two float32 values (an exact zero sum is +0 unless both are -0)."""
    s = _special(a, b, lambda x, y: x + y)
    if s is not None:
        return s
    both_neg = math.copysign(1.0, a) < 0 and math.copysign(1.0, b) < 0
    return f32(Fraction(a) + Fraction(b), negative_zero=both_neg and a == 0 and b == 0)


def sub(a: float, b: float) -> float:
    """float32 difference of two float32 values."""
    return add(a, -b)

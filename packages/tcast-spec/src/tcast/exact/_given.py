"""Exact model of given scales and zero points (SEMANTICS.md §5.12).

A given part is a float32 value encoded into its format: a scale by clamping and rounding
(float formats) or by the smallest power of two at least as large (exponent formats), a
zero point by the element encoder with saturation.
"""

from __future__ import annotations

import math
from fractions import Fraction

from .._dyadic import floor_log2
from .._text import quote
from ..errors import SpecError
from ..kit._given import check_given_parts
from ..number import NumberSpec
from ._f32 import is_f32
from ._scalar import encode

__all__ = [
    "check_given_parts",
    "f32_value",
    "given_scale_code",
    "given_value",
    "given_zero_code",
]


def given_value(v: object, what: str, *, signed: bool) -> float:
    """``v`` as a finite float32 value (``>= 0`` unless ``signed``).

    Args:
        v: the given number.
        what: its name in messages (``"scale[3]"``, ``"tensor_scale"``).
        signed: whether negative values are allowed (zero points).

    Raises:
        SpecError: for a non-number, a value that is not a float32 value, an infinite or NaN
            value, or a negative scale.
    """
    f = f32_value(v, what, f"{what} must be a real number")
    if not math.isfinite(f):
        raise SpecError(f"{what} must be finite, got {f!r}: give a finite value")
    if not signed and f < 0:
        raise SpecError(f"{what} must not be negative, got {f!r}: a scale is a magnitude")
    return f


def f32_value(x: object, what: str, rule: str) -> float:
    """``x`` as a float that is a float32 value, or a SpecError naming ``what`` (or ``rule``)."""
    if isinstance(x, bool | str) or not hasattr(x, "__float__"):
        raise SpecError(f"{rule}, got {quote(x)}")
    try:
        v = float(x)  # type: ignore[arg-type]
    except (OverflowError, TypeError, ValueError):
        raise SpecError(f"{what} {quote(x)} is not a float32 value") from None
    if not is_f32(v):
        raise SpecError(f"{what} {quote(x)} is not a float32 value")
    return v


def given_scale_code(v: float, s: NumberSpec) -> int:
    """The code of a given scale value ``v`` (a checked float32 value ``>= 0``) in ``s``.

    Float formats: ``RNE_S(clamp(v, smallest_normal, max))``. Exponent formats: the
    smallest power of two ``2**e >= v``, code ``clamp(e + bias, 0, max_code)``; 0 for 0.
    """
    if s.is_exponent:
        if v == 0:
            return 0
        a = Fraction(v)
        e = floor_log2(a)
        e += 1 if Fraction(2) ** e < a else 0
        return min(max(e + s.bias, 0), s.max_code)
    v = min(max(v, s.smallest_normal), s.maxfloat)
    return encode(v, s, "even", saturate=True)


def given_zero_code(v: float, z: NumberSpec) -> int:
    """The code of a given zero point ``v`` (a checked float32 value) in ``z``.

    ``fl32(v + 0)`` is encoded: a given -0 is +0, as a computed zero point always is.
    """
    v = v + 0.0
    if z.is_integer:
        return encode(v, z, "even")
    return encode(v, z, "even", saturate=True)

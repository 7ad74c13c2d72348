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
from ..datatype import DataType
from ..errors import SpecError
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
    """The code of a given zero point ``v`` (a checked float32 value) in ``z``."""
    if z.is_integer:
        return encode(v, z, "even")
    return encode(v, z, "even", saturate=True)


def check_given_parts(dt: DataType, scale: object, zero: object, tensor_scale: object) -> None:
    """Refuse given parts ``dt`` has no place for (SEMANTICS.md §5.12).

    Raises:
        SpecError: naming the datatype and the part.
    """
    if scale is None and zero is None and tensor_scale is None:
        return
    s = dt.sspec
    if s is None:
        raise SpecError(f"{dt.name} is unscaled: it takes no given scale, zero or tensor_scale")
    if dt.nspec.is_codebook or s.offset_bits > 0:
        raise SpecError(
            f"given scales are not defined for {dt.name}: its metadata (subtile offsets or "
            f"codebook mappings) is chosen with its scales; cast without given scales"
        )
    if zero is not None and dt.zero is None:
        raise SpecError(f"{dt.name} has no zero point (only uint data has one): drop zero=")
    if tensor_scale is not None and not dt.is_multiscale:
        raise SpecError(
            f"{dt.name} has one scale level: tensor_scale= is for two-level datatypes such as nvfp4"
        )

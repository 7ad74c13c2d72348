"""Relative rounding error across magnitudes, for the ``error`` picture (pure Python).

Every point is a cast by the exact model (:mod:`tcast.exact`), round to nearest even:

* a number code or an unscaled datatype: each magnitude ``x`` is encoded on its own
  (saturating: above the maximum the error grows toward 1);
* a scaled datatype: ``x`` is cast in a block with one other element, the block amax ``A``
  (by default the element maximum ``M``, which makes the scale 1 under every scale rule,
  so the curve is the element format's own error); ``x`` runs up to ``A``.

The magnitudes are log-spaced over each format's range, plus (formats of at most 8 bits and
codebooks) every positive value of the format and every midpoint between neighbours, so the
curve touches 0 at each value and peaks at each tie.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from ._plot_values import value_rows
from ._text import quote
from .codebook import CodebookSpec
from .datatype import DataType
from .errors import SpecError, UnsupportedError
from .exact import cast_block, decode, encode, f32
from .kit import element_max
from .number import NumberSpec

__all__ = ["ErrorCurve", "error_curve", "magnitudes"]

#: Formats up to this width contribute their values and midpoints to the sampled points.
_GRID_BITS = 8
#: The sampled range starts this factor below the smallest positive value.
_BELOW = 4


@dataclass(frozen=True)
class ErrorCurve:
    """One format's relative error at each sampled magnitude."""

    #: What the curve is of, for a legend (``e2m1f``; ``mxfp4 (e2m1f, block amax 6)``).
    label: str
    #: The magnitudes (float32 values), ascending.
    xs: tuple[float, ...]
    #: ``|q(x) - x| / |x|`` at each magnitude.
    errors: tuple[float, ...]
    #: ``2**-(m+1)``, the largest relative error in the normal range of a float element
    #: (None for integer and codebook elements).
    bound: float | None
    #: Scaled datatypes: the block amax ``A`` each magnitude was cast with; else None.
    amax: float | None = None


def _positive_values(spec: NumberSpec | CodebookSpec) -> list[Fraction]:
    """The positive values of a narrow format or codebook (empty for wide formats)."""
    if isinstance(spec, CodebookSpec) or spec.bits <= _GRID_BITS:
        return sorted({abs(v) for row in value_rows(spec) for v, _ in row.points if v != 0})
    return []


def _smallest_positive(spec: NumberSpec | CodebookSpec) -> Fraction:
    if isinstance(spec, CodebookSpec):
        return min(abs(Fraction(v)) for row in spec.tables for v in row if v != 0)
    if spec.is_float:
        return Fraction(spec.smallest_subnormal)
    return Fraction(spec.smallest_normal)  # 1 for integers, 2**emin for exponent types


def magnitudes(lo: float, hi: float, points: int) -> list[float]:
    """``points`` log-spaced float32 magnitudes from ``lo`` to ``hi`` (both included).

    Raises:
        SpecError: unless ``0 < lo < hi`` and ``points >= 2``.
    """
    if isinstance(points, bool) or not isinstance(points, int) or points < 2:
        raise SpecError(f"points must be an int of at least 2, got {quote(points)}")
    if not 0 < lo < hi or not math.isfinite(hi):
        raise SpecError(f"the magnitude range needs 0 < lo < hi, got {lo!r} .. {hi!r}")
    a, b = math.log2(lo), math.log2(hi)
    return [f32(2 ** (a + (b - a) * i / (points - 1))) for i in range(points)]


def _relative(q: float, x: float) -> float:
    if math.isnan(q) or math.isinf(q):
        return math.inf
    return float(abs(Fraction(q) - Fraction(x)) / Fraction(x))


def error_curve(
    fmt: NumberSpec | CodebookSpec | DataType, points: int = 1000, amax: float | None = None
) -> ErrorCurve:
    """The relative error of round-to-nearest-even casts of one format.

    Args:
        fmt: a number spec, or a datatype (scaled or not).
        points: how many log-spaced magnitudes (the format's values and midpoints come on
            top for formats of at most 8 bits).
        amax: scaled datatypes: the block amax ``A``, rounded to float32 (default: the
            element maximum, scale 1); refused for unscaled formats.

    Returns:
        The curve.

    Raises:
        SpecError: for a bad ``points`` or ``amax``.
        UnsupportedError: for a bare codebook (give a scaled datatype such as ``mxfi4``).
    """
    scaled = isinstance(fmt, DataType) and fmt.sspec is not None
    spec = fmt.nspec if isinstance(fmt, DataType) else fmt
    if isinstance(spec, CodebookSpec) and not scaled:
        raise UnsupportedError(
            f"{spec.code} is a bare codebook: its mapping is chosen per block; plot a scaled "
            "datatype that uses it (mxfi4, mxfp4m, or e.g. "
            f"{spec.code}_e8m0_t32{'s8' if spec.meta_bits else ''})"
        )
    if amax is not None and not scaled:
        raise SpecError(f"amax is for scaled datatypes; {fmt} has no block scale")
    small = _smallest_positive(spec)
    values = _positive_values(spec)
    if scaled:
        assert isinstance(fmt, DataType) and fmt.sspec is not None
        top = element_max(spec, fmt.sspec.scale.is_exponent)  # a codebook's: its largest entry
        a = Fraction(f32(top)) if amax is None else Fraction(_amax(amax))
        ratio = a / spec.max_value  # element values in the units of the block
        lo, hi = small * ratio / _BELOW, a
        label = f"{fmt.name} ({spec.code}, block amax {float(a):g})"
    else:
        ratio = Fraction(1)
        lo, hi = small / _BELOW, 2 * spec.max_value
        label = str(fmt.name if isinstance(fmt, DataType) else spec.code)
    xs = set(magnitudes(float(lo), float(hi), points))
    prev = Fraction(0)
    for v in values:
        xs.update((f32(v * ratio), f32((prev + v) / 2 * ratio)))
        prev = v
    xs = {x for x in xs if float(lo) <= x <= float(hi) and x > 0}
    ordered = sorted(xs)
    if scaled:
        assert isinstance(fmt, DataType)
        af = float(a)
        errs = [_relative(cast_block([af, x], fmt).values[1], x) for x in ordered]
    else:
        assert isinstance(spec, NumberSpec)
        errs = [_relative(decode(encode(x, spec), spec), x) for x in ordered]
    bound = 2.0 ** -(spec.mbits + 1) if isinstance(spec, NumberSpec) and spec.is_float else None
    return ErrorCurve(label, tuple(ordered), tuple(errs), bound, float(a) if scaled else None)


def _amax(amax: object) -> float:
    """``amax`` rounded to float32 (blocks hold float32 values)."""
    if isinstance(amax, bool) or not isinstance(amax, int | float) or not amax > 0:
        raise SpecError(f"amax must be a positive number, got {quote(amax)}")
    a = f32(amax)
    if not math.isfinite(a):
        raise SpecError(f"amax must be at most the largest float32 value, got {quote(amax)}")
    return a

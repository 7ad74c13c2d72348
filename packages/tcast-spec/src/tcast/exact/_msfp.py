"""Exact rule of subtile exponent offsets (SEMANTICS.md §5.8; MSFP MX9/MX6/MX4).

Pure functions of primitive arguments: the subtile's scaled inputs are float32 values (the
block's elements after its scale multiplier), ``emax`` the element format's ``floor_log2(M)``
under the block's scale.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from fractions import Fraction

from .._dyadic import floor_log2 as _floor_log2
from ..errors import SpecError

__all__ = ["subtile_offset"]


def subtile_offset(scaled: Sequence[float], emax: int, offset_bits: int) -> int:
    """The exponent offset ``d`` of one subtile.

    ``a = max |x'|`` over the subtile; ``d = 2**B - 1`` when ``a = 0``, else
    ``clamp(emax - floor_log2(a), 0, 2**B - 1)`` (exact, from the bits).

    Args:
        scaled: the subtile's scaled inputs ``x'`` (float32 values; ±Inf, a product
            ``fl32(x * r)`` that overflowed, gives d = 0).
        emax: ``floor_log2`` of the element maximum under the block's scale (MXINT: 0).
        offset_bits: the offset width B (1..4).

    Returns:
        The offset d in ``[0, 2**B - 1]``.

    Raises:
        SpecError: for a NaN input or an offset width outside 1..4.
    """
    if not (isinstance(offset_bits, int) and 1 <= offset_bits <= 4):
        raise SpecError(f"an offset width is 1..4 bits, not {offset_bits!r}")
    top = (1 << offset_bits) - 1
    a = 0.0
    for x in scaled:
        if math.isnan(x):
            raise SpecError(f"subtile offsets are for finite blocks, got {x!r}")
        if math.isinf(x):  # fl32(x * r) overflowed: above every binade
            return 0
        a = max(a, abs(x))
    if a == 0:
        return top
    return min(max(emax - _floor_log2(Fraction(a)), 0), top)

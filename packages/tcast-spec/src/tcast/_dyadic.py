"""Exact powers of two and binades of positive rationals (integer arithmetic only)."""

from __future__ import annotations

from fractions import Fraction


def pow2(e: int) -> Fraction:
    """``2**e`` as an exact Fraction, for any integer ``e``."""
    return Fraction(1 << e) if e >= 0 else Fraction(1, 1 << -e)


def floor_log2(v: Fraction) -> int:
    """Exact ``floor(log2 v)`` for ``v > 0``.

    From integer bit lengths: never a float log2, and only integer arithmetic, which
    torch.compile traces.
    """
    num, den = v.numerator, v.denominator
    e = num.bit_length() - den.bit_length()
    fits = (den << e) <= num if e >= 0 else den <= (num << -e)
    return e if fits else e - 1
